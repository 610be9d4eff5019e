//! The object types of the C API: the tag every token C holds carries
//! (bits 4–7), whether the object lives in the [`registry`]'s table or in a
//! slab of [`hot`] objects, so that a pointer of one type passed for
//! another is recognised and named.
//!
//! [`registry`]: crate::registry
//! [`hot`]: crate::hot

/// The object types of the C API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `fdb_handle_t`.
    Handle = 1,
    /// `fdb_key_t`.
    Key = 2,
    /// `fdb_request_t`.
    Request = 3,
    /// `fdb_split_key_t`.
    SplitKey = 4,
    /// `fdb_listiterator_t`.
    ListIterator = 5,
    /// `fdb_datareader_t`.
    DataReader = 6,
    /// `fdb_wipe_iterator_t`.
    WipeIterator = 7,
    /// `fdb_wipe_element_t`.
    WipeElement = 8,
    /// `fdb_purge_iterator_t`.
    PurgeIterator = 9,
    /// `fdb_purge_element_t`.
    PurgeElement = 10,
}

impl Kind {
    /// The C type's name, for messages.
    pub fn c_name(self) -> &'static str {
        match self {
            Kind::Handle => "fdb_handle_t",
            Kind::Key => "fdb_key_t",
            Kind::Request => "fdb_request_t",
            Kind::SplitKey => "fdb_split_key_t",
            Kind::ListIterator => "fdb_listiterator_t",
            Kind::DataReader => "fdb_datareader_t",
            Kind::WipeIterator => "fdb_wipe_iterator_t",
            Kind::WipeElement => "fdb_wipe_element_t",
            Kind::PurgeIterator => "fdb_purge_iterator_t",
            Kind::PurgeElement => "fdb_purge_element_t",
        }
    }

    pub(crate) fn from_tag(tag: u64) -> Option<Kind> {
        Some(match tag {
            1 => Kind::Handle,
            2 => Kind::Key,
            3 => Kind::Request,
            4 => Kind::SplitKey,
            5 => Kind::ListIterator,
            6 => Kind::DataReader,
            7 => Kind::WipeIterator,
            8 => Kind::WipeElement,
            9 => Kind::PurgeIterator,
            10 => Kind::PurgeElement,
            _ => return None,
        })
    }
}

impl fieldstore_cabi::token::Kind for Kind {
    fn tag(self) -> u8 {
        self as u8
    }

    fn from_tag(tag: u8) -> Option<Kind> {
        Kind::from_tag(u64::from(tag))
    }

    fn c_name(self) -> &'static str {
        Kind::c_name(self)
    }
}
