//! autocoll: self-tuning collective communication.
//!
//! Design in brief. A collective call goes
//! `Communicator` → `Selector` (which [`Implementation`]) → a generic
//! algorithm over a [`Tree`] (or a named non-tree algorithm) → the
//! [`Transport`] trait's point-to-point messages. Trees are data, built once
//! per (shape, size, root, virtual-rank table) by [`tree`]; broadcast and
//! reduce are one segmented pipeline each, scatter and gather one
//! forwarding scheme each, valid over any tree; ring, recursive doubling,
//! Rabenseifner and dissemination have a file each under `coll`. Below the
//! typed API everything is bytes, so an algorithm is written once for all
//! element types. An [`observe::Observer`] sees every stage of every call,
//! at no cost when absent.
#![deny(missing_docs)]

pub mod balance;
pub mod binding;
pub mod check;
pub mod clock;
mod coll;
pub mod comm;
pub mod error;
pub mod files;
pub mod ids;
pub mod launch;
pub mod layout;
pub mod measure;
pub mod observe;
pub mod pattern;
pub mod select;
pub mod stats;
pub mod trace;
pub mod transport;
pub mod tree;

pub use coll::op::{Builtin, Element, Op};
pub use comm::{local, sim, Communicator, Transport};
pub use error::{Error, Result};
pub use layout::Layout;
pub use select::{Algorithm, Collective, Implementation, Selector};
pub use tree::{Shape, Tree};

/// Builds this process's communicator from how it was started: the
/// `AUTOCOLL_*` variables `autocoll launch` sets give a `tcp` job; without
/// them the process is a job of one rank (like an MPI singleton). With
/// `AUTOCOLL_TRACE=DIR` set, every rank records a trace into DIR
/// ([`Communicator::trace`]); with `AUTOCOLL_BALANCE` set, the balancer is
/// on ([`balance::from_env`]); with `AUTOCOLL_PATTERN=FILE` set, every
/// message is counted and rank 0 writes the job's pattern to FILE at the
/// end ([`pattern::from_env`]); with `AUTOCOLL_STATE=FILE` or
/// `AUTOCOLL_SELECT` set, the lottery (remembering across runs in FILE), a
/// tuning table or fixed implementations select every call
/// (`lottery`, `lottery:FILE`, `table:FILE`, `fixed:IMPL[,IMPL...]`). A
/// rank of a `tcp` job binds itself to a core where its machine runs more
/// ranks than cores, or as `AUTOCOLL_BIND_TO` says ([`binding`]).
pub fn init() -> Result<Communicator> {
    if let Some(config) = comm::tcp::Config::from_env()? {
        let how = binding::from_env()?;
        let tcp = comm::tcp::Tcp::connect(&config)?;
        binding::apply(config.rank, tcp.clocks(), how)?;
        return traced(Communicator::new(Box::new(tcp)));
    }
    #[cfg(feature = "mpi")]
    if comm::mpi::under_mpirun() {
        return comm::mpi::world();
    }
    let one = local::transports(1)
        .pop()
        .expect("one transport for one rank");
    traced(Communicator::new(Box::new(one)))
}

/// `comm`, counting its messages if `AUTOCOLL_PATTERN` asks for it,
/// recording if `AUTOCOLL_TRACE` does, balancing if `AUTOCOLL_BALANCE`
/// does and selecting as `AUTOCOLL_SELECT` and `AUTOCOLL_STATE` do. The
/// counting starts first, so that it sees every collective; the selection
/// last, so that a state file keeps the balancer's tables too.
fn traced(mut comm: Communicator) -> Result<Communicator> {
    pattern::from_env(&mut comm)?;
    trace::from_env(&mut comm)?;
    balance::from_env(&mut comm)?;
    comm::selecting::from_env(&mut comm)?;
    Ok(comm)
}
