//! Per-field cost of MARS key extraction (placeholder, filled in below).
fn main() {}
