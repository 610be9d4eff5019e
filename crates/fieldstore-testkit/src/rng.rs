//! A small seeded random number generator (SplitMix64), so that randomised
//! checks print their seed and a failure reproduces.

/// The environment variable that fixes the seed of randomised tests.
pub const SEED_VAR: &str = "FIELDSTORE_TEST_SEED";

/// SplitMix64's output function: a good 64-bit mixer.
pub fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// SplitMix64.
#[derive(Debug, Clone)]
pub struct Rng {
    state: u64,
}

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng { state: seed }
    }

    /// The seed from [`SEED_VAR`] if set, else one from the clock; printed
    /// (with `what`) so that a failing run can be repeated.
    ///
    /// # Panics
    /// If [`SEED_VAR`] is set but is not an integer.
    pub fn from_env(what: &str) -> Rng {
        let seed = match std::env::var(SEED_VAR) {
            Ok(s) => s
                .trim()
                .parse()
                .unwrap_or_else(|_| panic!("{SEED_VAR}={s:?} is not an unsigned integer")),
            Err(_) => {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                mix(t ^ u64::from(std::process::id()))
            }
        };
        println!("{what}: seed {seed} (rerun with {SEED_VAR}={seed} to reproduce)");
        Rng::new(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.state)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        // Multiply-shift: bias is negligible for the small n used here.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}
