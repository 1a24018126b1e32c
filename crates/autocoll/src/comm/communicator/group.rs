//! The communicator as the [`Group`] selectors agree through: small fixed
//! collectives that never ask a selector.

use std::sync::Arc;

use super::Communicator;
use crate::coll::op::Op;
use crate::error::Result;
use crate::ids::Collective;
use crate::layout::Layout;
use crate::select::{Fold, Group, Implementation};
use crate::tree::Shape;

impl Group for Communicator {
    fn rank(&self) -> usize {
        self.transport.rank()
    }

    fn size(&self) -> usize {
        self.transport.size()
    }

    fn shared_clock(&self) -> bool {
        self.transport.shared_clock()
    }

    fn host_count(&self) -> usize {
        self.layout().map_or(1, Layout::host_count)
    }

    fn ranks_layout(&self) -> Option<Arc<Layout>> {
        self.layout.as_ref().ok().cloned()
    }

    fn fold_to_rank0(&mut self, values: &mut [f64], how: Fold) -> Result<()> {
        let imp = Implementation::tree(Collective::Reduce, Shape::Binomial, None)?;
        let mine = values.to_vec();
        let op = match how {
            Fold::Max => Op::MAX,
            Fold::Mean => Op::SUM,
            Fold::Min => Op::MIN,
        };
        self.unbalanced(|c| c.reduce_with(&imp, &mine, values, &op, 0))?;
        if how == Fold::Mean && self.rank() == 0 {
            let ranks = self.size() as f64;
            values.iter_mut().for_each(|v| *v /= ranks);
        }
        Ok(())
    }

    fn share_rank0(&mut self, values: &mut [u64]) -> Result<()> {
        let imp = Implementation::tree(Collective::Bcast, Shape::Binomial, None)?;
        self.unbalanced(|c| c.bcast_with(&imp, values, 0))
    }
}
