//! ZooKeeper, a 3-server ensemble (Debian's `zookeeper` package, 3.8), locked with the recipe
//! of ZooKeeper's documentation ("Recipes and Solutions", Locks): each contender creates an
//! ephemeral sequential znode under the lock's path, the one with the lowest sequence number
//! holds the lock, and every other watches the znode just ahead of its own. The fencing token
//! is the lock znode's czxid, the zxid of the transaction that created it: zxids only grow
//! (epoch in the high 32 bits, so across leader changes too), and a znode is created after
//! every znode ahead of it. The session timeout, negotiated from `lock.ttl_ms`, plays the part
//! of a TTL: the ensemble deletes a session's ephemeral znodes when it expires.

pub mod client;
mod session;
pub mod setup;

pub use client::Client;
pub use setup::Setup;

/// Every server's client port.
pub const PORT: u16 = 2181;
