//! Who sent a resource request. A client program runs in its worker's container, so it can reach
//! the resource as the worker does; what it cannot read is the worker's configuration (root's,
//! mode 0600), which holds the worker's proof. The proof is an HMAC of the worker's process
//! number under a key the run draws and gives only to the resource: the resource checks each
//! request's proof against the process it names, so a request is attributed to the worker that
//! really sent it, and anything else is refused (docs/threat-model.md).

use hmac::{KeyInit, Mac};

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The run's key, as hex: given to the resource (its environment) and to nobody else.
#[derive(Clone)]
pub struct RunKey(Vec<u8>);

/// The environment variable that carries the key into the resource's container.
pub const KEY_ENV: &str = "LOCKCHAOS_RESOURCE_KEY";

impl RunKey {
    /// A fresh key from the OS's randomness.
    pub fn generate() -> Self {
        let mut key = vec![0u8; 32];
        rand::fill(&mut key[..]);
        RunKey(key)
    }

    pub fn from_hex(hex: &str) -> anyhow::Result<Self> {
        let key = decode_hex(hex).ok_or_else(|| anyhow::anyhow!("{KEY_ENV} is not hex"))?;
        anyhow::ensure!(key.len() >= 16, "{KEY_ENV} is shorter than 16 bytes");
        Ok(RunKey(key))
    }

    pub fn to_hex(&self) -> String {
        encode_hex(&self.0)
    }

    fn mac(&self, process: u64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(b"lockchaos resource request of process ");
        mac.update(&process.to_be_bytes());
        mac
    }

    /// The proof a worker of `process` sends with each request.
    pub fn proof(&self, process: u64) -> String {
        encode_hex(&self.mac(process).finalize().into_bytes())
    }

    /// The password the run's workers log in to a Postgres resource with (postgres_table.rs):
    /// one for all of them, as the table's log names the client itself.
    pub fn workers_password(&self) -> String {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        mac.update(b"lockchaos postgres resource password");
        encode_hex(&mac.finalize().into_bytes())
    }

    /// Whether `proof` is `process`'s (compared in constant time).
    pub fn verifies(&self, process: u64, proof: &str) -> bool {
        decode_hex(proof).is_some_and(|bytes| self.mac(process).verify_slice(&bytes).is_ok())
    }
}

impl std::fmt::Debug for RunKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RunKey(…)")
    }
}

fn encode_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) || hex.len() > 256 {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proof_holds_for_its_process_under_its_key_only() {
        let key = RunKey::generate();
        let proof = key.proof(3);
        assert!(key.verifies(3, &proof));
        assert!(!key.verifies(4, &proof), "another process");
        assert!(!RunKey::generate().verifies(3, &proof), "another run's key");
        assert!(!key.verifies(3, ""), "no proof");
        assert!(!key.verifies(3, "zz"), "not hex");
        assert!(!key.verifies(3, &proof[..proof.len() - 2]), "a prefix");
        let again = RunKey::from_hex(&key.to_hex()).unwrap();
        assert!(again.verifies(3, &proof), "the key survives hex");
        assert!(RunKey::from_hex("abcd").is_err(), "too short");
    }
}
