//! A communicator's balancer: put in, taken out, and kept out of the
//! library's own small collectives.

use super::Communicator;
use crate::balance::balancer::Balancer;
use crate::balance::params::Params as BalanceParams;
use crate::error::{Error, Result};

impl Communicator {
    /// Balances the collectives `params` names with a new balancer (in
    /// place of any before it): collective, every rank calls it with the
    /// same parameters. Its tables start from the ones set; with the
    /// lottery on ([`Self::use_lottery`]), from the ones its state file
    /// keeps, and they are saved there.
    pub fn use_balancer(&mut self, params: BalanceParams) -> Result<()> {
        let tables = |op| match self.tables.get(&op) {
            Some(t) => t.ranks.to_vec(),
            None => (0..self.size()).collect(),
        };
        let mut balancer = Balancer::new(params, self.rank(), self.size(), tables)?;
        if let Some(store) = &self.state {
            balancer.attach_store(store.clone());
        }
        self.put_balancer(balancer)?;
        Ok(())
    }

    /// The balancer in use, if any.
    pub fn balancer(&self) -> Option<&Balancer> {
        self.balancer.as_deref()
    }

    /// Takes the balancer out: the collectives it balanced go back to the
    /// tables set. Every rank must take it out at the same call.
    pub fn take_balancer(&mut self) -> Option<Balancer> {
        let balancer = self.balancer.take()?;
        self.remove_observer(balancer.observer());
        Some(*balancer)
    }

    /// Puts `balancer` in (made on this communicator and taken out with
    /// [`Self::take_balancer`]), returning the one it replaces. Every rank
    /// must put it in at the same call.
    pub fn put_balancer(&mut self, balancer: Balancer) -> Result<Option<Balancer>> {
        if balancer.size() != self.size() {
            return Err(Error::Config(format!(
                "a balancer made for {} ranks put in a communicator of {}",
                balancer.size(),
                self.size()
            )));
        }
        let old = self.take_balancer();
        self.add_observer(balancer.observer().clone());
        self.balancer = Some(Box::new(balancer));
        Ok(old)
    }

    /// Runs `f` with the balancer out: the library's own small collectives
    /// (agreements, clock and decision messages) are neither balanced nor
    /// counted.
    pub(crate) fn unbalanced<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let balancer = self.balancer.take();
        let out = f(self);
        self.balancer = balancer;
        out
    }
}
