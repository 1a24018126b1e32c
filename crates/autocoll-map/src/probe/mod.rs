//! The probe: measuring a topology's links and switches (the paper's §2
//! and Figure 1), NetPIPE-like, from inside a job of one rank per
//! processing element placed linearly.
//!
//! [`plan`] is pure: from the topology's shape it picks the *curves* to
//! measure, each a set of disjoint pairs of ranks exchanging messages over
//! a range of lengths in one [`Mode`], and what each curve sets:
//!
//! - every link gets the one-way bandwidth table of a pair whose path has
//!   that link at its top (two processing elements of one host for its
//!   memory; two sibling hosts for their links; a switch's uplink through
//!   a pair that crosses it), bottom-up, so that a pair's lower links are
//!   already those of another curve. One pair alone gets the table's
//!   bandwidth in the paper's model, so the table is the pair's bandwidth
//!   over the whole path: the path's slowest link is what one pair sees;
//! - every such pair is measured both ways too (each sends while the other
//!   does): the report's "B" curves, which say whether links are full
//!   duplex;
//! - a switch with at least four units below it (children or its own
//!   processing elements) is measured with as many disjoint pairs as fit,
//!   all at once: both ways for the report (Figure 1's "4T B in subnet"),
//!   and streaming one way for its `max`, which is set only when the
//!   streams together get clearly less than each gets alone (the switch,
//!   not the links, is then the bottleneck);
//! - a link with at least two processing elements below it and two units
//!   beside it gets its maximum each way from that many pairs streaming
//!   across it at once.
//!
//! [`run`] is the measurement, every rank of the job running the same
//! plan; [`apply`] writes the results into the topology.

mod apply;
mod measure;
mod plan;

pub use apply::apply;
pub use measure::{calls, run};
pub use plan::{plan, Curve, Dir, Mode, Options, Point, Port, Sets};
