//! Multi-process tests (being written).
fn main() {}
