//! Pseudonyms for direct identifiers that must still join (`[output]
//! pseudonymize`): the lowercase hex of HMAC-SHA-256(key, value), the key the
//! UTF-8 bytes of an environment variable, the value the column's text as
//! kanon prints it. The same key gives the same pseudonym on every run and
//! engine. The key lives only in this process's memory (and, on Spark, in the
//! session's data, never in a statement's text): [`Key`] has no Display and
//! its Debug shows nothing of it.

use crate::error::bad;
use anyhow::Result;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The pseudonymization key. Cloning shares it.
#[derive(Clone)]
pub struct Key(Arc<[u8]>);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(hidden)")
    }
}

/// SHA-256's block size: HMAC's pads are this long.
const BLOCK: usize = 64;

impl Key {
    /// The key from environment variable `var`: exit 2 when it is unset or
    /// empty (the message names the variable, never a value).
    pub(crate) fn from_env(var: &str, job: &str) -> Result<Key> {
        match std::env::var_os(var) {
            Some(v) if !v.is_empty() => match v.into_string() {
                Ok(s) => Ok(Key(s.into_bytes().into())),
                Err(_) => Err(bad(format!("{job}: [output] pseudonymize: the key in ${var} is not UTF-8"))),
            },
            _ => Err(bad(format!(
                "{job}: [output] pseudonymize needs a key: set the environment variable {var} (named by [output] key_env) to a non-empty secret"
            ))),
        }
    }

    /// A key from bytes (tests).
    pub fn new(bytes: &[u8]) -> Key {
        Key(bytes.into())
    }

    /// The pseudonym of `value`: HMAC-SHA-256 in lowercase hex.
    pub fn pseudonym(&self, value: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(value);
        hex(&mac.finalize().into_bytes())
    }

    /// HMAC's inner and outer padded keys (RFC 2104: the key, hashed when
    /// longer than a block, zero-padded, XOR 0x36 and XOR 0x5c), in hex: an
    /// engine with SHA-256 but no HMAC computes the same pseudonym as
    /// sha256(outer ‖ sha256(inner ‖ value)). Secrets as much as the key.
    pub fn pads_hex(&self) -> (String, String) {
        let mut block = [0u8; BLOCK];
        if self.0.len() > BLOCK {
            block[..32].copy_from_slice(&Sha256::digest(&self.0));
        } else {
            block[..self.0.len()].copy_from_slice(&self.0);
        }
        let inner: Vec<u8> = block.iter().map(|b| b ^ 0x36).collect();
        let outer: Vec<u8> = block.iter().map(|b| b ^ 0x5c).collect();
        (hex(&inner), hex(&outer))
    }

    /// `text` with the key masked wherever it appears (a page that quotes the job).
    pub(crate) fn mask(&self, text: &str) -> String {
        match std::str::from_utf8(&self.0) {
            Ok(key) if !key.is_empty() => text.replace(key, "***"),
            _ => text.to_string(),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // RFC 4231, test cases 1 and 2 (HMAC-SHA-256).
    #[test]
    fn rfc_4231_vectors() {
        assert_eq!(
            Key::new(&[0x0b; 20]).pseudonym(b"Hi There"),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        assert_eq!(
            Key::new(b"Jefe").pseudonym(b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn pads_give_the_same_hmac() {
        let unhex = |s: &str| (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect();
        for key in [&b"k"[..], &[7u8; 64][..], &[9u8; 100][..]] {
            let k = Key::new(key);
            let (inner, outer): (Vec<u8>, Vec<u8>) = {
                let (i, o) = k.pads_hex();
                (unhex(&i), unhex(&o))
            };
            let h1 = Sha256::digest([inner, b"42".to_vec()].concat());
            let h2 = Sha256::digest([outer, h1.to_vec()].concat());
            assert_eq!(hex(&h2), k.pseudonym(b"42"));
        }
    }

    #[test]
    fn debug_shows_no_key() {
        assert_eq!(format!("{:?}", Key::new(b"secret")), "Key(hidden)");
    }
}
