//! Parameter names in requests and keys, resolved through the schema's
//! [`ParamNames`] table before they are matched, expanded or split (see
//! [`crate::params`]).

use std::borrow::Cow;
use std::sync::Arc;

use super::{Schema, SchemaError};
use crate::params::{is_name, ParamNames};
use crate::request::{Item, Request, RequestError, Values};
use crate::{Key, KeywordType};

impl Schema {
    /// This schema with `names` resolving parameter names (`2t` → `167`)
    /// in every request and key it is given.
    #[must_use]
    pub fn with_param_names(mut self, names: Arc<dyn ParamNames>) -> Schema {
        self.param_names = Some(names);
        self
    }

    /// The parameter table, if one is installed.
    pub fn param_names(&self) -> Option<&Arc<dyn ParamNames>> {
        self.param_names.as_ref()
    }

    /// Whether `keyword`'s values are parameters everywhere in the schema
    /// (every type it has is `Param` or `ParamID`): only then is a name
    /// among them a parameter name and not text some rule keeps as is.
    fn is_param_keyword(&self, keyword: &str) -> bool {
        let types = self.types_of(keyword);
        !types.is_empty()
            && types
                .iter()
                .all(|t| matches!(t, KeywordType::Param | KeywordType::ParamId))
    }

    /// The paramId of `name` as text, or `None` if the table does not know it.
    fn resolve_name(&self, names: &dyn ParamNames, name: &str) -> Option<String> {
        names
            .param_id(&name.trim().to_ascii_lowercase())
            .map(|id| id.to_string())
    }

    /// `request` with parameter names replaced by paramIds; borrowed when
    /// there is no table or nothing to replace.
    ///
    /// # Errors
    /// [`RequestError::UnknownParameter`] naming the first name the table
    /// does not know.
    pub fn resolve_request<'r>(
        &self,
        request: &'r Request,
    ) -> Result<Cow<'r, Request>, RequestError> {
        let Some(names) = self.param_names.as_deref() else {
            return Ok(Cow::Borrowed(request));
        };
        let named = |kw: &str, values: &Values| {
            self.is_param_keyword(kw)
                && matches!(values, Values::Items(items)
                    if items.iter().any(|i| matches!(i, Item::Value(v) if is_name(v))))
        };
        if !request.iter().any(|(kw, v)| named(kw, v)) {
            return Ok(Cow::Borrowed(request));
        }
        let mut resolved = Request::new();
        for (kw, values) in request.iter() {
            let values = match values {
                Values::Items(items) if named(kw, values) => {
                    let mut out = Vec::with_capacity(items.len());
                    for item in items {
                        out.push(match item {
                            Item::Value(v) if is_name(v) => {
                                Item::Value(self.resolve_name(names, v).ok_or_else(|| {
                                    RequestError::UnknownParameter {
                                        keyword: kw.to_string(),
                                        name: v.to_string(),
                                    }
                                })?)
                            }
                            other => other.clone(),
                        });
                    }
                    Values::Items(out)
                }
                other => other.clone(),
            };
            resolved.set(kw, values);
        }
        Ok(Cow::Owned(resolved))
    }

    /// `key` with parameter names replaced by paramIds; borrowed when there
    /// is no table or nothing to replace.
    ///
    /// # Errors
    /// [`SchemaError::UnknownParameter`] naming the first name the table
    /// does not know.
    pub fn resolve_key<'k>(&self, key: &'k Key) -> Result<Cow<'k, Key>, SchemaError> {
        let Some(names) = self.param_names.as_deref() else {
            return Ok(Cow::Borrowed(key));
        };
        let named = |kw: &str, v: &str| is_name(v) && self.is_param_keyword(kw);
        if !key.iter().any(|(kw, v)| named(kw, v)) {
            return Ok(Cow::Borrowed(key));
        }
        let mut resolved = key.clone();
        for (kw, v) in key.iter().filter(|(kw, v)| named(kw, v)) {
            let unknown = || SchemaError::UnknownParameter {
                keyword: kw.to_string(),
                name: v.to_string(),
            };
            let id = self.resolve_name(names, v).ok_or_else(unknown)?;
            // A paramId is a valid value: `set` cannot refuse it.
            resolved.set(kw, id).map_err(|_| unknown())?;
        }
        Ok(Cow::Owned(resolved))
    }
}
