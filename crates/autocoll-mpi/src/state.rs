//! Each communicator's autocoll state, found through an MPI attribute.
//!
//! The first handled collective on a communicator builds its state (a
//! collective step: every rank is in that call): a private duplicate
//! (`PMPI_Comm_dup`, inside [`Mpi::on`]), an autocoll `Communicator` over
//! it with the selector the settings ask for, its trace and balancer. The
//! state's number is stored as an attribute of the program's communicator,
//! whose delete callback drops the state when the program frees it.
//! `MPI_Finalize` drops what is left first ([`drop_all`]), while MPI can
//! still carry the traces' last messages and the lottery's save.
//!
//! Every communicator's lottery learns into one [`Shared`] of the
//! process, by shape (its ranks' placement over hosts), so a communicator
//! the program makes starts where the last one of its shape got to; each
//! saves its shape's pools to the state file when it is freed.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use autocoll::comm::mpi::Mpi;
use autocoll::pattern::Recording;
use autocoll::select::estimate::Link;
use autocoll::select::lottery::{Budget, Params};
use autocoll::select::state::Shared;
use autocoll::select::{default_candidates, Group, Lottery, Selector, Table};
use autocoll::{Collective, Communicator, Implementation};
use mpi::ffi::{self, MPI_Comm};

use crate::boundary;
use crate::config::{Config, Select};
use crate::sys;

/// One communicator's state.
pub struct State {
    /// autocoll's communicator over the private duplicate.
    pub comm: Communicator,
}

/// The states by number; numbers agree across the ranks of a communicator
/// (the largest of the ranks' next numbers), so a program's communicators
/// are dropped in one order on every rank.
struct Registry {
    keyval: Option<c_int>,
    next: u64,
    states: BTreeMap<u64, Arc<Mutex<State>>>,
    /// What the communicators' lotteries learned, by shape.
    shared: Option<Shared>,
    /// The machine's model a start-up probe measured, once a process.
    probed: Option<Link>,
    /// The communicator of the last call that found its state.
    last: Option<Known>,
}

/// A communicator whose state is built, with its rank and size: a call on
/// it skips the checks and the attribute lookup (most programs call on one
/// communicator, and on a machine shared by several ranks those MPI calls
/// were the larger part of the library's cost on a small call).
/// Forgotten when the program frees the communicator, and at finalize.
#[derive(Clone)]
pub struct Known {
    /// The program's communicator (its handle's bits).
    comm: usize,
    /// This rank in it.
    pub rank: usize,
    /// Its number of ranks.
    pub size: usize,
    /// Its state.
    pub state: Arc<Mutex<State>>,
}

impl Known {
    /// Whether it is `comm`.
    fn is(&self, comm: MPI_Comm) -> bool {
        self.comm == comm.0 as usize
    }
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    keyval: None,
    next: 0,
    states: BTreeMap::new(),
    shared: None,
    probed: None,
    last: None,
});

fn registry() -> std::sync::MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// `comm` if the last call that found its state was on it.
pub fn known(comm: MPI_Comm) -> Option<Known> {
    registry().last.as_ref().filter(|k| k.is(comm)).cloned()
}

/// The state of `comm` (an intracommunicator of `size` ranks, this one
/// `rank`), built on its first call; `None` when it cannot be built (said
/// on stderr), and the call goes to MPI.
pub fn of(comm: MPI_Comm, rank: usize, size: usize) -> Option<Arc<Mutex<State>>> {
    let keyval = keyval()?;
    let found = match attribute(comm, keyval) {
        Some(id) => registry().states.get(&id).cloned(),
        None => build(comm, rank, keyval)
            .map_err(|why| boundary::disable(&format!("could not set up a communicator: {why}")))
            .ok(),
    };
    let state = found?;
    registry().last = Some(Known {
        comm: comm.0 as usize,
        rank,
        size,
        state: state.clone(),
    });
    Some(state)
}

fn keyval() -> Option<c_int> {
    let mut reg = registry();
    if reg.keyval.is_none() {
        reg.keyval = sys::create_keyval(delete).ok();
    }
    reg.keyval
}

fn attribute(comm: MPI_Comm, keyval: c_int) -> Option<u64> {
    let mut value: *mut c_void = std::ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: `value` receives the pointer-sized attribute this library
    // stored (a number, not an address).
    let code = unsafe {
        ffi::PMPI_Comm_get_attr(
            comm,
            keyval,
            (&mut value as *mut *mut c_void).cast(),
            &mut flag,
        )
    };
    (code == sys::SUCCESS && flag != 0).then_some(value as usize as u64)
}

fn build(comm: MPI_Comm, rank: usize, keyval: c_int) -> Result<Arc<Mutex<State>>, String> {
    let config = boundary::config();
    let (id, probe) = agree(comm, rank == 0 && wants_probe(config))?;
    // SAFETY: MPI is initialised (checked by the boundary), `comm` is an
    // intracommunicator (checked by `coll::plan`), and the transport is
    // used under its state's lock only.
    let mpi = unsafe { Mpi::on(comm) }.map_err(|e| e.to_string())?;
    let transport: Box<dyn autocoll::Transport> = match crate::pattern::recorder() {
        Some(rec) => Box::new(Recording::new(
            Box::new(mpi),
            rec.clone(),
            crate::pattern::world_ranks(comm),
        )),
        None => Box::new(mpi),
    };
    let mut c = Communicator::new(transport);
    // A collective waits as long as its peers take, as MPI's own do: a
    // rank that reads a file for a minute before a broadcast is no error.
    c.set_timeout(Duration::MAX);
    let same = is_world(comm);
    if let Some(dir) = &config.trace {
        // Communicators made alike at once (the halves of a split) agree
        // on one number: the world rank of their rank 0 tells them apart.
        let dir = match same {
            true => dir.clone(),
            false => {
                let leader = crate::pattern::world_ranks(comm).map_or(0, |w| w[0]);
                dir.join(format!("comm-{id}-w{leader}"))
            }
        };
        c.trace(dir).map_err(|e| e.to_string())?;
    }
    if let Some(params) = &config.balance {
        c.use_balancer(params.clone()).map_err(|e| e.to_string())?;
    }
    if probe {
        let link = autocoll::measure::link::probe(&mut c).map_err(|e| e.to_string())?;
        let mut reg = registry();
        reg.probed = reg.probed.or(link);
    }
    let shared = registry()
        .shared
        .get_or_insert_with(Shared::default)
        .clone();
    choose_selector(&mut c, config, shared);
    let state = Arc::new(Mutex::new(State { comm: c }));
    registry().states.insert(id, state.clone());
    // SAFETY: the attribute value is a number stored in a pointer's bits.
    let code = unsafe { ffi::PMPI_Comm_set_attr(comm, keyval, id as usize as *mut c_void) };
    sys::ok(code).map_err(|code| format!("MPI_Comm_set_attr returned {code}"))?;
    Ok(state)
}

/// The largest of the ranks' next numbers, taken by every rank, and
/// whether rank 0 wants the machine probed (`probe` is rank 0's wish; the
/// others pass false): one small reduction settles both.
fn agree(comm: MPI_Comm, probe: bool) -> Result<(u64, bool), String> {
    let mine = [registry().next, u64::from(probe)];
    let mut agreed = [0u64; 2];
    // SAFETY: two u64 each way, on the program's communicator, which
    // every rank is in (this is inside one of its collective calls).
    let code = unsafe {
        ffi::PMPI_Allreduce(
            mine.as_ptr().cast(),
            agreed.as_mut_ptr().cast(),
            2,
            ffi::RSMPI_UINT64_T,
            ffi::RSMPI_MAX,
            comm,
        )
    };
    sys::ok(code).map_err(|code| format!("MPI_Allreduce returned {code}"))?;
    registry().next = agreed[0] + 1;
    Ok((agreed[0], agreed[1] != 0))
}

/// Whether this process should probe the machine when it builds a
/// communicator's state as its rank 0: a lottery with no model given and
/// none probed yet (the probe costs a few round trips, once a process).
fn wants_probe(config: &Config) -> bool {
    matches!(config.select, Select::Lottery(_))
        && config.model.is_none()
        && registry().probed.is_none()
}

/// Whether `comm` is `MPI_COMM_WORLD` itself.
fn is_world(comm: MPI_Comm) -> bool {
    let mut result: c_int = 0;
    // SAFETY: both communicators are valid.
    let code = unsafe { ffi::PMPI_Comm_compare(comm, sys::world(), &mut result) };
    // SAFETY: a constant of rsmpi's shim.
    code == sys::SUCCESS && result == unsafe { ffi::RSMPI_IDENT }
}

/// The selector the settings ask for. Every communicator's lottery shares
/// what it learns with the others of its shape through `shared`, and
/// saves to the state file: saves merge under a lock, and each saves the
/// freshest of its shape.
fn choose_selector(c: &mut Communicator, config: &Config, shared: Shared) {
    match &config.select {
        Select::Lottery(prior) => {
            let lottery = lottery(c, config, prior.clone()).with_shared(shared);
            c.use_lottery_with(lottery, config.state.clone());
        }
        Select::Table(table) => c.set_selector(Box::new(Rules::Table(table.clone()))),
        Select::Fixed(imps) => c.set_selector(Box::new(Rules::Fixed(imps.clone()))),
        Select::Native => {}
    }
}

/// The lottery over autocoll's candidates and the MPI library's own,
/// under a budget: each pool's incumbent, from its first call, is the
/// tuning file's pick where `prior` has one, else the MPI library's own.
fn lottery(c: &Communicator, config: &Config, prior: Option<Box<Table>>) -> Lottery {
    let hosts = c.layout().map_or(1, |l| l.host_count());
    let params = Params {
        objective: config.objective,
        budget: Some(Budget::default()),
        ..Params::default()
    };
    let lottery = Lottery::new(params, autocoll::clock::now_ns())
        .with_candidates(move |op, ranks, bytes| {
            let mut candidates = default_candidates(op, ranks, bytes, hosts);
            candidates.push(Implementation::native(op));
            candidates
        })
        .with_incumbent(move |op, ranks, bytes| {
            let rule = prior
                .as_ref()
                .and_then(|t| t.lookup(op, ranks, bytes).cloned());
            Some(rule.unwrap_or_else(|| Implementation::native(op)))
        });
    match (config.model, registry().probed) {
        (Some(link), _) => lottery.with_link(link),
        (None, Some(probed)) => lottery.with_probed(probed),
        (None, None) => lottery,
    }
}

/// A tuning table or fixed choices; anything they do not name runs as the
/// MPI library's own.
enum Rules {
    Table(Box<autocoll::select::Table>),
    Fixed(Vec<Implementation>),
}

impl Selector for Rules {
    fn select(
        &mut self,
        group: &mut dyn Group,
        op: Collective,
        bytes: usize,
    ) -> autocoll::Result<Implementation> {
        let rule = match self {
            Rules::Table(table) => table.lookup(op, group.size(), bytes),
            Rules::Fixed(imps) => imps.iter().find(|imp| imp.op == op),
        };
        Ok(rule.cloned().unwrap_or_else(|| Implementation::native(op)))
    }
}

/// The machine's model this process probed at start-up, if it did.
pub fn probed() -> Option<Link> {
    registry().probed
}

/// Drops every state, oldest number first: traces are written and the
/// lottery saves while MPI still runs. Called by `MPI_Finalize`.
pub fn drop_all() {
    registry().last = None;
    let states = std::mem::take(&mut registry().states);
    for (_, state) in states {
        drop(state);
    }
}

/// The attribute's delete callback: the program freed a communicator.
unsafe extern "C" fn delete(
    comm: MPI_Comm,
    _keyval: c_int,
    value: *mut c_void,
    _extra: *mut c_void,
) -> c_int {
    let id = value as usize as u64;
    // The handle may be reused by a communicator made later.
    let state = std::panic::catch_unwind(|| {
        let mut reg = registry();
        if reg.last.as_ref().is_some_and(|k| k.is(comm)) {
            reg.last = None;
        }
        reg.states.remove(&id)
    });
    if let Ok(Some(state)) = state {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(state)));
    }
    sys::SUCCESS
}
