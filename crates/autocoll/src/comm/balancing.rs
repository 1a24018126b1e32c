//! The balancer on a communicator: turned on from the environment, and
//! the communicator as the channel its decisions travel on.

use crate::balance::balancer::protocol::Comm;
use crate::balance::params::{params_of_env, ENV_BALANCE};
use crate::comm::communicator::Communicator;
use crate::error::Result;
use crate::layout::Layout;
use crate::select::Implementation;
use crate::transport::Transport;

/// Turns the balancer on as `AUTOCOLL_BALANCE` asks, if it is set
/// (collective: every rank's environment must agree). A value that does
/// not parse is an error naming the variable.
pub fn from_env(comm: &mut Communicator) -> Result<()> {
    match params_of_env(std::env::var_os(ENV_BALANCE))? {
        Some(params) => comm.use_balancer(params),
        None => Ok(()),
    }
}

impl Comm for Communicator {
    fn transport_mut(&mut self) -> &mut dyn Transport {
        Communicator::transport_mut(self)
    }

    fn layout(&self) -> Result<&Layout> {
        Communicator::layout(self)
    }

    fn bcast_with(&mut self, imp: &Implementation, words: &mut [u32], root: usize) -> Result<()> {
        Communicator::bcast_with(self, imp, words, root)
    }
}
