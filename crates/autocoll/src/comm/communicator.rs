//! The communicator: what it holds, how a call is numbered, chosen and run
//! through the algorithms of `coll`. Its typed collectives, its recording,
//! its balancer, the group its selector agrees through and the
//! sub-communicators it makes are in the child modules.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::balance::balancer::Balancer;
use crate::clock::now_ns;
use crate::coll::dispatch::{dispatch, Call};
use crate::coll::Ctx;
use crate::comm::raw::RawCall;
use crate::comm::trace_options::{self, Tracing};
use crate::error::{Error, Result};
use crate::ids::CallSig;
use crate::ids::Collective;
use crate::layout::Layout;
use crate::observe::{Observer, Stage};
use crate::pattern::recording::Sink;
use crate::select::lottery::Params;
use crate::select::state::{Fingerprint, Store};
use crate::select::{Algorithm, Fixed, Group, Implementation, Lottery, Selector};
use crate::transport::shared::View;
use crate::transport::{Tag, Transport};
use crate::tree::table::RankTable;
use crate::tree::{Shape, Tree};

mod balancer;
mod group;
mod recording;
mod split;
mod typed;
mod varied;

/// A group of ranks that run collectives together.
///
/// Every rank must make the same collective calls in the same order, with
/// the same root and message size, as in MPI. Each call is numbered; a rank
/// that disagrees is reported with both calls named.
pub struct Communicator {
    transport: Box<dyn Transport>,
    /// The view `transport` is (or wraps) once this communicator shares
    /// its rank's transport with others made from it or from its parent.
    view: Option<View>,
    seq: u64,
    /// Trees built, by (table version, shape, root).
    trees: HashMap<(u64, Shape, usize), Arc<Tree>>,
    /// Each collective's virtual-rank table; absent: the identity.
    tables: HashMap<Collective, RankTable>,
    /// Keeps the tables of the collectives it balances.
    balancer: Option<Box<Balancer>>,
    /// The lottery's state file, where a balancer keeps its tables too.
    state: Option<Store>,
    /// Where the ranks run, or why the transport's reports make no layout
    /// (said when something needs it, not at creation, which cannot fail).
    layout: std::result::Result<Arc<Layout>, String>,
    /// Every observer a call reports to: the one set with `set_observer`,
    /// the added ones, the recorder. Rebuilt when one of them changes.
    observers: Vec<Arc<dyn Observer>>,
    user_observer: Option<Arc<dyn Observer>>,
    added: Vec<Arc<dyn Observer>>,
    tracing: Option<Tracing>,
    /// Where the pattern's counts go at the end, when one is recorded.
    pattern: Option<Sink>,
    selector: Box<dyn Selector>,
}

/// Trees kept at most; more are built again. A balancer's trial makes a
/// new table every few calls, and tools swap balancers in and out.
const MAX_TREES: usize = 64;

impl Communicator {
    /// A communicator over `transport`, with the built-in selector.
    pub fn new(transport: Box<dyn Transport>) -> Self {
        let layout = match Layout::new(transport.hosts(), transport.switches()) {
            Ok(layout) => Ok(Arc::new(layout)),
            Err(Error::Layout(why)) => Err(why),
            Err(other) => Err(other.to_string()),
        };
        Communicator {
            transport,
            view: None,
            seq: 0,
            trees: HashMap::new(),
            tables: HashMap::new(),
            balancer: None,
            state: None,
            layout,
            observers: Vec::new(),
            user_observer: None,
            added: Vec::new(),
            tracing: None,
            pattern: None,
            selector: Box::new(Fixed::default()),
        }
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.transport.size()
    }

    /// The transport's kind: `local`, `tcp` or `mpi`.
    pub fn transport_kind(&self) -> &'static str {
        self.transport.kind()
    }

    /// True when all ranks read one monotonic clock.
    pub fn shared_clock(&self) -> bool {
        self.transport.shared_clock()
    }

    /// The host of every rank (the layout's, when one is set).
    pub fn hosts(&self) -> Vec<String> {
        match &self.layout {
            Ok(layout) => layout.hosts(),
            Err(_) => self.transport.hosts(),
        }
    }

    /// Where the ranks run: every rank's host and switch, as the transport
    /// reported them or as [`Self::set_layout`] gave them. An error when
    /// the reports do not make a layout (ranks of one host naming two
    /// switches).
    pub fn layout(&self) -> Result<&Layout> {
        match &self.layout {
            Ok(layout) => Ok(layout),
            Err(why) => Err(Error::Layout(why.clone())),
        }
    }

    /// Replaces the layout the transport reported: a topology file's, or
    /// the hosts a `local` job stands for (every rank must set the same).
    /// Trees built so far are dropped; `hier` trees follow the new layout.
    pub fn set_layout(&mut self, layout: Layout) -> Result<()> {
        if layout.size() != self.size() {
            return Err(Error::Layout(format!(
                "a layout of {} ranks for a communicator of {}",
                layout.size(),
                self.size()
            )));
        }
        self.layout = Ok(Arc::new(layout));
        self.trees.clear();
        Ok(())
    }

    /// How long a rank waits for a peer before reporting it lost.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.transport.set_timeout(timeout);
    }

    /// Installs (or, with `None`, removes) the observer of every call; it
    /// takes the place of the one set before, and leaves the added ones
    /// and the recorder in theirs.
    pub fn set_observer(&mut self, observer: Option<Arc<dyn Observer>>) {
        self.user_observer = observer;
        self.gather_observers();
    }

    /// Adds an observer of every call, beside the others.
    pub fn add_observer(&mut self, observer: Arc<dyn Observer>) {
        self.added.push(observer);
        self.gather_observers();
    }

    /// Removes an observer added with [`Self::add_observer`]; false if it
    /// was not there.
    pub fn remove_observer(&mut self, observer: &Arc<dyn Observer>) -> bool {
        let before = self.added.len();
        self.added.retain(|o| !Arc::ptr_eq(o, observer));
        self.gather_observers();
        self.added.len() < before
    }

    fn gather_observers(&mut self) {
        let recorder = self
            .tracing
            .as_ref()
            .map(|t| t.recorder.clone() as Arc<dyn Observer>);
        self.observers = self
            .user_observer
            .iter()
            .chain(&self.added)
            .cloned()
            .chain(recorder)
            .collect();
    }

    /// Numbers a call that the library makes with raw messages (the
    /// recording's clock exchanges), so that its tag is the same on all
    /// ranks and distinct from every other call's.
    pub(crate) fn reserve_call(&mut self, op: Collective) -> CallSig {
        let sig = CallSig {
            seq: self.seq,
            op,
            root: 0,
            bytes: 0,
        };
        self.seq += 1;
        sig
    }

    pub(crate) fn transport_mut(&mut self) -> &mut dyn Transport {
        self.transport.as_mut()
    }

    /// Replaces the selector that picks the implementation of plain calls.
    pub fn set_selector(&mut self, selector: Box<dyn Selector>) {
        self.selector = selector;
    }

    /// Sets the virtual-rank table of every collective (a permutation of
    /// the ranks: the order in which they take the positions of every
    /// tree); `None` is the identity. A balancer keeps its own tables for
    /// the collectives it balances (they start from these when it is put
    /// in).
    pub fn set_virtual_ranks(&mut self, table: Option<Vec<usize>>) -> Result<()> {
        self.tables.clear();
        if let Some(t) = table {
            let shared = self.checked_table(t)?;
            for op in Collective::ALL {
                self.tables.insert(op, shared.clone());
            }
        }
        Ok(())
    }

    /// [`Self::set_virtual_ranks`] for `op` alone.
    pub fn set_virtual_ranks_of(
        &mut self,
        op: Collective,
        table: Option<Vec<usize>>,
    ) -> Result<()> {
        match table {
            Some(t) => {
                let table = self.checked_table(t)?;
                self.tables.insert(op, table);
            }
            None => {
                self.tables.remove(&op);
            }
        }
        Ok(())
    }

    fn checked_table(&self, table: Vec<usize>) -> Result<RankTable> {
        Tree::build(&Shape::Chain, self.size(), 0, Some(&table))?;
        Ok(RankTable::new(table))
    }

    /// The virtual-rank table `op`'s trees are built with: the balancer's
    /// when it balances `op`, else the one set; `None` for the identity.
    pub fn virtual_ranks(&self, op: Collective) -> Option<&[usize]> {
        self.rank_table(op).map(|t| &t.ranks[..])
    }

    fn rank_table(&self, op: Collective) -> Option<&RankTable> {
        match &self.balancer {
            Some(b) if b.balances(op) => b.rank_table(op),
            _ => self.tables.get(&op),
        }
    }

    /// The tree of `shape` rooted at `root` as a broadcast builds it
    /// ([`Self::tree_of`] for `bcast`).
    pub fn tree(&mut self, shape: &Shape, root: usize) -> Result<Arc<Tree>> {
        self.tree_of(Collective::Bcast, shape, root)
    }

    /// The tree of `shape` rooted at `root` with `op`'s virtual-rank table,
    /// built once and cached. Only `hier` reads the layout.
    pub fn tree_of(&mut self, op: Collective, shape: &Shape, root: usize) -> Result<Arc<Tree>> {
        let table = self.rank_table(op).cloned();
        let key = (table.as_ref().map_or(0, |t| t.version), shape.clone(), root);
        if let Some(tree) = self.trees.get(&key) {
            return Ok(tree.clone());
        }
        if self.trees.len() >= MAX_TREES {
            self.trees.clear();
        }
        let ranks = table.as_ref().map(|t| &t.ranks[..]);
        let tree = Arc::new(match shape {
            Shape::Hier(_) => Tree::build_in(shape, self.layout()?, root, ranks)?,
            _ => Tree::build(shape, self.size(), root, ranks)?,
        });
        self.trees.insert(key, tree.clone());
        Ok(tree)
    }

    /// Sends a point-to-point message outside any collective.
    pub fn send_bytes(&mut self, dest: usize, tag: u64, data: Bytes) -> Result<()> {
        self.transport.send(dest, Tag::user(tag), data)
    }

    /// Receives a point-to-point message sent with [`Self::send_bytes`].
    pub fn recv_bytes(&mut self, src: usize, tag: u64) -> Result<Bytes> {
        self.transport.recv(src, Tag::user(tag))
    }

    /// Asks the selector, which may run small fixed collectives through
    /// this communicator to agree on its choice. Every rank must ask for
    /// every call, in the same order, as the plain calls do.
    pub fn choose(&mut self, op: Collective, bytes: usize) -> Result<Implementation> {
        // The stand-in is a zero-sized type: boxing it allocates nothing,
        // and this runs on every plain call.
        let mut selector = std::mem::replace(&mut self.selector, Box::new(Choosing));
        let choice = selector.select(self, op, bytes);
        self.selector = selector;
        choice
    }

    /// Uses the lottery scheduler for every plain call, remembering what it
    /// learns in `state` (read now on rank 0, written back by
    /// [`Self::save_selector`] and when the communicator is dropped).
    pub fn use_lottery(&mut self, state: impl Into<std::path::PathBuf>) {
        let lottery = Lottery::new(Params::default(), crate::clock::now_ns());
        self.use_lottery_with(lottery, Some(state.into()));
    }

    /// Uses `lottery` (with its own parameters and candidates) for every
    /// plain call, remembering what it learns in `state` if given, as
    /// [`Self::use_lottery`] does.
    pub fn use_lottery_with(&mut self, mut lottery: Lottery, state: Option<PathBuf>) {
        let fingerprint = Fingerprint::new(&self.hosts(), self.transport_kind())
            .measuring(lottery.params().objective);
        lottery.set_shape(fingerprint.shape());
        let Some(state) = state else {
            self.set_selector(Box::new(lottery));
            return;
        };
        let store = Store::new(state, fingerprint, self.rank() == 0);
        if let Some(balancer) = &mut self.balancer {
            balancer.attach_store(store.clone());
        }
        self.state = Some(store.clone());
        self.set_selector(Box::new(lottery.with_store(store)));
    }

    /// Saves what the selector has learned, if it keeps anything, and the
    /// balancer's tables beside it.
    pub fn save_selector(&mut self) -> Result<()> {
        self.selector.save()?;
        self.balancer.as_ref().map_or(Ok(()), |b| b.save())
    }

    /// Runs `imp` on a call given as bytes, as a foreign caller (the MPI
    /// interposition library) hands it over; [`Self::choose`] picks `imp`.
    /// The buffers' lengths are checked as the typed calls check theirs.
    pub fn run_raw(&mut self, imp: &Implementation, raw: RawCall<'_>) -> Result<()> {
        raw.check(self.rank(), self.size())?;
        let call = Call {
            op: raw.op,
            root: raw.root,
            bytes: raw.bytes,
            elem: raw.elem,
            send: raw.send,
            recv: raw.recv,
            combine: raw.combine,
            sizes: (raw.send_sizes, raw.recv_sizes),
        };
        self.run(imp, call)
    }

    /// Runs `native`, the caller's own version of a call that the selector
    /// gave to `<op>:mpi`, and reports its time to the selector like any
    /// other call's (no observer sees inside it).
    pub fn run_native<R>(
        &mut self,
        imp: &Implementation,
        bytes: usize,
        native: impl FnOnce() -> R,
    ) -> R {
        let timed = self.selector.wants_times().then(now_ns);
        let out = native();
        if let Some(enter) = timed {
            self.selector.record(imp, bytes, enter, now_ns());
        }
        out
    }

    /// Checks the call, numbers it, and runs `imp` on it.
    fn run(&mut self, imp: &Implementation, call: Call<'_>) -> Result<()> {
        if imp.op != call.op {
            return Err(Error::WrongOp {
                imp: imp.to_string(),
                op: call.op.to_string(),
            });
        }
        let size = self.size();
        if call.root >= size {
            return Err(Error::RankOutOfRange {
                rank: call.root,
                size,
            });
        }
        let shape = match &imp.algorithm {
            Algorithm::Tree(shape) => Some(shape),
            _ => None,
        };
        let balanced =
            shape.is_some() && self.balancer.as_ref().is_some_and(|b| b.balances(call.op));
        if balanced {
            self.decide_balance(call.op)?;
        }
        let tree = shape
            .map(|shape| self.tree_of(call.op, shape, call.root))
            .transpose()?;
        let sig = CallSig {
            seq: self.seq,
            op: call.op,
            root: call.root as u32,
            bytes: call.bytes as u64,
        };
        self.seq += 1;
        if let (true, Some(b)) = (balanced, &self.balancer) {
            b.arm(sig.seq);
        }
        let timed = self.selector.wants_times().then(now_ns);
        let mut ctx = Ctx {
            rank: self.transport.rank(),
            size,
            transport: self.transport.as_mut(),
            call: sig,
            imp,
            tree: tree.as_deref(),
            layout: self.layout.as_deref().map_err(String::as_str),
            observers: &self.observers,
        };
        ctx.note(Stage::Enter, 0, 0, None);
        dispatch(&mut ctx, tree.as_deref(), call)?;
        ctx.transport.finish_sends()?;
        ctx.note(Stage::Done, 0, 0, None);
        if let Some(enter) = timed {
            self.selector
                .record(imp, sig.bytes as usize, enter, now_ns());
        }
        if let (true, Some(shape), Some(b)) = (balanced, shape, &mut self.balancer) {
            b.after(self.transport.as_mut(), sig.op, shape, sig.root as usize);
        }
        Ok(())
    }

    /// The balancer's decision, when one is due before this call of `op`;
    /// its messages are calls of their own, unbalanced.
    fn decide_balance(&mut self, op: Collective) -> Result<()> {
        let Some(mut balancer) = self.balancer.take() else {
            return Ok(());
        };
        let decided = balancer.before(self, op);
        self.balancer = Some(balancer);
        decided
    }
}

/// Holds a communicator's place of transport while it is moved into a
/// wrapper: a one-rank channel, through which nothing is sent.
fn stand_in() -> Box<dyn Transport> {
    Box::new(
        crate::transport::local::transports(1)
            .pop()
            .expect("one rank"),
    )
}

/// Stands in for the selector while it chooses: the selector's own
/// collectives name their implementation, so nothing asks this one.
struct Choosing;

impl Selector for Choosing {
    fn select(&mut self, _: &mut dyn Group, op: Collective, _: usize) -> Result<Implementation> {
        Err(Error::Config(format!(
            "a selector ran a plain {op} while choosing: its own collectives must name their implementation"
        )))
    }
}

impl Drop for Communicator {
    /// Writes the trace, if recording, gathers the pattern to rank 0 and
    /// writes it, if recording one, and saves what the selector learned;
    /// a failure can only be reported. The trace's end-offset
    /// exchange waits a short time only, so that a job whose rank died
    /// still writes what it has (and so does the pattern's gathering).
    fn drop(&mut self) {
        if let Some(mut tracing) = self.tracing.take() {
            if tracing.estimates_offsets() {
                self.transport.set_timeout(trace_options::FINAL_TIMEOUT);
            }
            if let Err(e) = tracing.write(self) {
                eprintln!("autocoll: warning: could not write the trace: {e}");
            }
        }
        if let Some(sink) = self.pattern.take() {
            self.transport.set_timeout(trace_options::FINAL_TIMEOUT);
            if let Err(e) = sink.finish(self.transport.as_mut()) {
                eprintln!("autocoll: warning: could not write the pattern: {e}");
            }
        }
        let mut selector = std::mem::replace(&mut self.selector, Box::new(Choosing));
        if let Err(e) = selector.finish(self) {
            eprintln!("autocoll: warning: could not learn from the last calls: {e}");
        }
        self.selector = selector;
        if let Err(e) = self.selector.save() {
            eprintln!("autocoll: warning: could not save the selector's state: {e}");
        }
        if let Some(Err(e)) = self.balancer.as_ref().map(|b| b.save()) {
            eprintln!("autocoll: warning: could not save the balancer's tables: {e}");
        }
    }
}
