//! Real payloads (tests/golden/), damaged: truncated, bytes flipped,
//! counts inflated. Every decoder given any of them returns a value or an
//! error — never a panic, never an allocation the payload could not back —
//! and what decodes re-encodes to bytes that decode to the same value. The
//! same checks as the `remote` fuzz target (fuzz/), run in every `cargo
//! test` on inputs close to real ones.

use std::path::PathBuf;

use fieldstore_remote::frame::decode_frame;
use fieldstore_remote::roundtrip::every_decoder;
use proptest::prelude::*;

fn payloads() -> Vec<Vec<u8>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut out = Vec::new();
    for sub in ["dual", "single", "wipe"] {
        for entry in std::fs::read_dir(dir.join(sub)).expect("golden dir") {
            let path = entry.expect("entry").path();
            if path.extension().is_none_or(|e| e != "bin") {
                continue;
            }
            let bytes = std::fs::read(&path).expect("read");
            let mut rest = &bytes[..];
            while let Ok((_, p, r)) = decode_frame(rest, 1 << 30) {
                // The schema replies are large: their first 4 KiB will do.
                out.push(p[..p.len().min(4096)].to_vec());
                rest = r;
            }
        }
    }
    out.retain(|p| !p.is_empty());
    out
}

#[test]
fn undamaged_payloads_go_through_every_decoder() {
    let all = payloads();
    assert!(all.len() > 40, "{} payloads", all.len());
    for p in &all {
        every_decoder(p);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn damaged_payloads_decode_or_fail_cleanly(
        which in any::<prop::sample::Index>(),
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        cut_it: bool,
    ) {
        let all = payloads();
        let mut p = all[which.index(all.len())].clone();
        for (at, byte) in flips {
            let i = at.index(p.len());
            p[i] = byte;
        }
        if cut_it {
            p.truncate(cut.index(p.len() + 1));
        }
        every_decoder(&p);
    }
}
