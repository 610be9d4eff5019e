//! Reading a configuration, schema or map file as text, within a limit.

use std::path::Path;

use fieldstore_core::{Error, ErrorKind, Result};

/// The most bytes [`read_text_file`] reads: far above any real
/// configuration, schema (ECMWF's is 40 KiB) or expver map.
pub const TEXT_FILE_LIMIT: u64 = 16 << 20;

/// The text of a configuration, schema or map file, `label` naming it in
/// errors (`config /etc/fs.yaml`). At most [`TEXT_FILE_LIMIT`] bytes are
/// read, so a device (`/dev/zero`), a FIFO fed forever or a huge file given
/// by mistake ends with an error at once instead of filling the memory.
///
/// # Errors
/// As [`Error::io`] if it cannot be opened or read (`NotFound`,
/// `PermissionDenied`, `Io` for a directory); `InvalidConfig` if it holds
/// more than the limit or is not UTF-8 text (a binary file given by
/// mistake is a configuration error, not damaged data).
pub fn read_text_file(path: &Path, label: &str) -> Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| Error::io(label, e))?;
    let mut bytes = Vec::new();
    file.take(TEXT_FILE_LIMIT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io(label, e))?;
    if bytes.len() as u64 > TEXT_FILE_LIMIT {
        return Err(Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "{label}: larger than {} MiB, the limit for a configuration, schema or map file: \
                 is it the right file?",
                TEXT_FILE_LIMIT >> 20
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::InvalidConfig,
            format!(
                "{label}: not UTF-8 text (invalid byte at offset {}): is it the right file?",
                e.utf8_error().valid_up_to()
            ),
        )
    })
}
