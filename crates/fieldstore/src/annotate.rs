//! `fs.annotate(entries)`: keep something learnt about fields after they
//! were archived (GRIB jump info built on a field's first extraction,
//! `docs/extract.md`) with their index entries, as annotations
//! ([`FieldLocation::annotates`], `fieldstore_core::annotation`).
//!
//! Each annotation names the field by the location `list` gave for it, and
//! applies only while the field's key is still at that location: an
//! annotation written after the field was replaced or wiped applies to
//! nothing, so it can never resurrect it. Written through the catalogue
//! like archived entries (one writer and one atomic flush per dataset),
//! it is carried by wipe, purge and move as the entry is, on every backend.

use std::collections::BTreeMap;
use std::sync::Arc;

use fieldstore_core::{CollocationKey, DatasetKey, ElementKey, FieldLocation, Result};

use crate::handle::FieldStore;
use crate::list::ListElement;

impl FieldStore {
    /// Annotate each listed field with an extension (`(field, extension)`,
    /// fields as [`FieldStore::list`] gave them, at the element level).
    /// Visible after this returns; a field whose key is at another
    /// location by then (replaced) or gone (wiped) is left as it is.
    /// Returns how many annotations were written (fields without a
    /// location are skipped; a dataset gone since it was listed is not
    /// created again).
    ///
    /// # Errors
    /// As [`FieldStore::flush`] (the first failure; datasets before it keep
    /// their annotations): I/O errors, `Locked` if a dataset is locked
    /// against archiving, `PermissionDenied` for a read-only store.
    pub fn annotate(&self, fields: &[(&ListElement, Arc<[u8]>)]) -> Result<usize> {
        self.check_process()?;
        type Annotations = Vec<(CollocationKey, ElementKey, FieldLocation)>;
        let mut by_dataset: BTreeMap<&DatasetKey, Annotations> = BTreeMap::new();
        for (field, extension) in fields {
            let Some(location) = &field.location else {
                continue;
            };
            by_dataset.entry(&field.dataset).or_default().push((
                field.collocation.clone(),
                field.element.clone(),
                location.annotation(extension.clone()),
            ));
        }
        let mut written = 0;
        for (dataset, annotations) in by_dataset {
            // Wiped since it was listed: nothing to annotate, and a writer
            // would create it again (empty).
            if self.catalogue.reader(dataset)?.is_none() {
                continue;
            }
            let mut writer = self.catalogue.writer(dataset, &self.schema)?;
            for (collocation, element, location) in &annotations {
                writer.insert(collocation, element, location)?;
            }
            writer.flush()?;
            written += annotations.len();
        }
        Ok(written)
    }
}
