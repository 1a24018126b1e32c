//! The load balancer: a virtual-rank table per collective that learns, at
//! run time, which ranks come late (Soga et al., 2007).
//!
//! A broadcast tree assumes every rank enters at once. A rank that comes
//! late because of its own work makes its whole subtree wait, and the
//! positions that receive first have the largest subtrees. The balancer
//! measures every rank's *wait* in every broadcast (from entering the call
//! to the first segment from its parent, through the observer hook) and
//! changes the table, the only way it changes a tree, so that late ranks
//! move to positions where nobody waits for them:
//!
//! - each rank compares its wait with the one it last reported and, when it
//!   changed by more than the thresholds, sends the new one to rank 0 (a
//!   small message on a reserved tag that never blocks, after the period's
//!   last call: at most one per rank and period);
//! - every N-th balanced call of a collective, before it, rank 0 drains the
//!   reports (`Transport::try_recv`), decides one change (the
//!   [`rules`](self)), and one small binomial broadcast carries it and the
//!   next N to every rank: all ranks change the table at the same call.
//!   When nothing is to be done N doubles, up to `max_period`;
//! - a change is a trial: the next decision keeps it if the total wait
//!   dropped, and otherwise undoes it and leaves it alone until the loads
//!   move (hysteresis: balanced ranks see no change after a few periods).
//!
//! Turn it on with [`crate::Communicator::use_balancer`], or with
//! `AUTOCOLL_BALANCE` for programs built on [`crate::init`] and
//! [`crate::local::run`]. docs/balance.md has the whole story.

pub(crate) mod balancer;
mod op;
pub(crate) mod params;
mod probe;
mod rules;

pub use crate::comm::balancing::from_env;
pub use balancer::protocol::{REPORT_TAGS, REPORT_TAG_BASE};
pub use balancer::Balancer;
pub use op::Status;
pub use params::{Mode, Params, BALANCED_OPS, ENV_BALANCE};
