// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
//! Prints CASES random cases, one a line: the pattern and the key in hex
//! ("-" when empty),
//! then the crate's answer: 1 (matches), 0 (does not), E (Pattern::new
//! refuses the pattern). Usage: globdiff CASES SEED
use glob::Pattern;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*: the same cases for the same seed
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

// Characters of keys, and of patterns beside the metacharacters: brackets,
// '!', '^', '-', ']', '/', '\' and multi-byte UTF-8 (2, 3 and 4 bytes).
const CHARS: &[&str] = &[
    "a", "b", "c", "z", "0", "9", "/", "!", "^", "-", "]", "[", "\\", "*", "?", "é", "ω", "€", "😀",
];
const META: &[&str] = &["*", "?", "[", "]", "!", "-", "**", "[!", "^", "/"];

// Hex, and "-" for the empty string.
fn hex(s: &str) -> String {
    if s.is_empty() {
        return "-".to_string();
    }
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cases: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100_000);
    let seed: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let mut out = String::new();
    for _ in 0..cases {
        let mut pat = String::new();
        for _ in 0..rng.below(9) {
            if rng.below(2) == 0 {
                pat.push_str(META[rng.below(META.len())]);
            } else {
                pat.push_str(CHARS[rng.below(CHARS.len())]);
            }
        }
        // Half the keys are the pattern with its metacharacters replaced,
        // so that matches are frequent; the others are random.
        let mut key = String::new();
        if rng.below(2) == 0 {
            for ch in pat.chars() {
                match ch {
                    '*' => {
                        for _ in 0..rng.below(3) {
                            key.push_str(CHARS[rng.below(CHARS.len())]);
                        }
                    }
                    '?' | '[' | ']' | '!' => key.push_str(CHARS[rng.below(CHARS.len())]),
                    c => key.push(c),
                }
            }
        } else {
            for _ in 0..rng.below(9) {
                key.push_str(CHARS[rng.below(CHARS.len())]);
            }
        }
        let answer = match Pattern::new(&pat) {
            Err(_) => "E",
            Ok(p) if p.matches(&key) => "1",
            Ok(_) => "0",
        };
        out.push_str(&format!("{} {} {}\n", hex(&pat), hex(&key), answer));
    }
    print!("{out}");
}
