//! Parameter names in requests and keys, resolved through the schema's
//! [`ParamNames`] table before they are matched, expanded or split (see
//! [`crate::params`]).

use std::borrow::Cow;
use std::sync::Arc;

use super::{Schema, SchemaError};
use crate::key::Key;
use crate::params::{is_name, ParamNames};
use crate::request::{Item, Request, RequestError, Values};
use crate::types::KeywordType;

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

    /// `request` with its keywords in the schema's spelling (requests
    /// name keywords in any case: `generatingprocessidentifier` is the
    /// schema's `generatingProcessIdentifier`) and parameter names replaced
    /// by paramIds; borrowed when there is nothing to change.
    ///
    /// # Errors
    /// [`RequestError::UnknownParameter`] naming the first name the table
    /// does not know.
    pub fn resolve_request<'r>(
        &self,
        request: &'r Request,
    ) -> Result<Cow<'r, Request>, RequestError> {
        match self.spell_request(request) {
            Cow::Borrowed(r) => self.resolve_request_names(r),
            Cow::Owned(r) => Ok(Cow::Owned(self.resolve_request_names(&r)?.into_owned())),
        }
    }

    /// `request` with its keywords in the schema's spelling; keywords the
    /// schema does not use are kept (lower-case, as requests hold them).
    pub(crate) fn spell_request<'r>(&self, request: &'r Request) -> Cow<'r, Request> {
        let respelled = |kw: &str| self.spelling(kw).filter(|s| *s != kw);
        if !request.iter().any(|(kw, _)| respelled(kw).is_some()) {
            return Cow::Borrowed(request);
        }
        let mut spelled = Request::new();
        for (kw, values) in request.iter() {
            spelled.set_spelled(respelled(kw).unwrap_or(kw), values.clone());
        }
        Cow::Owned(spelled)
    }

    /// `key` with its keywords in the schema's spelling (keys name
    /// keywords in any case, as FDB5's tools do through metkit for MARS
    /// keywords); keywords the schema does not use are lower-cased, as
    /// they always were.
    ///
    /// # Errors
    /// [`SchemaError::KeywordTwice`] for one keyword given in two
    /// spellings.
    fn spell_key<'k>(&self, key: &'k Key) -> Result<Cow<'k, Key>, SchemaError> {
        if key.keywords().all(|kw| self.knows(kw)) {
            return Ok(Cow::Borrowed(key));
        }
        let mut pairs: Vec<(String, &str, &str)> = Vec::with_capacity(key.len());
        for (kw, v) in key.iter() {
            let spelled = self
                .spelling(kw)
                .map_or_else(|| kw.to_ascii_lowercase(), str::to_string);
            if let Some((_, first, _)) = pairs.iter().find(|(s, ..)| *s == spelled) {
                return Err(SchemaError::KeywordTwice {
                    keyword: spelled,
                    first: first.to_string(),
                    second: kw.to_string(),
                });
            }
            pairs.push((spelled, kw, v));
        }
        let spelled = Key::from_pairs(pairs.into_iter().map(|(s, _, v)| (s, v))).map_err(|e| {
            SchemaError::UnknownKeyword {
                keyword: e.to_string(),
            }
        })?;
        Ok(Cow::Owned(spelled))
    }

    /// `request` with parameter names replaced by paramIds; borrowed when
    /// there is no table or nothing to replace.
    fn resolve_request_names<'r>(
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
                Values::Items(items) if named(kw, values) => Values::Items(
                    items
                        .iter()
                        .map(|item| match item {
                            Item::Value(v) if is_name(v) => self
                                .resolve_name(names, v)
                                .map(Item::Value)
                                .ok_or_else(|| RequestError::UnknownParameter {
                                    keyword: kw.to_string(),
                                    name: v.to_string(),
                                }),
                            other => Ok(other.clone()),
                        })
                        .collect::<Result<_, _>>()?,
                ),
                other => other.clone(),
            };
            resolved.set_spelled(kw, values);
        }
        Ok(Cow::Owned(resolved))
    }

    /// `key` with its keywords in the schema's spelling (see
    /// `Schema::spell_key`) and parameter names replaced by paramIds;
    /// borrowed when there is nothing to change.
    ///
    /// # Errors
    /// [`SchemaError::UnknownParameter`] naming the first name the table
    /// does not know; [`SchemaError::KeywordTwice`].
    pub fn resolve_key<'k>(&self, key: &'k Key) -> Result<Cow<'k, Key>, SchemaError> {
        match self.spell_key(key)? {
            Cow::Borrowed(k) => self.resolve_key_names(k),
            Cow::Owned(k) => Ok(Cow::Owned(self.resolve_key_names(&k)?.into_owned())),
        }
    }

    /// `key` with parameter names replaced by paramIds; borrowed when there
    /// is no table or nothing to replace.
    fn resolve_key_names<'k>(&self, key: &'k Key) -> Result<Cow<'k, Key>, SchemaError> {
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
