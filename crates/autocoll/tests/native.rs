//! `check::run_compared` reports a library whose results differ from
//! autocoll's. The library here is a stand-in that moves nothing (its
//! output buffers keep their zeros), so every non-empty case must fail with
//! the library's name; the real one, MPI, is tested under mpirun by the
//! CLI's `tests/mpi.rs`.

use autocoll::check::{self, Case, Config, Dtype, Native};
use autocoll::{local, Builtin, Collective, Result};

struct Idle;

impl Native for Idle {
    fn name(&self, op: Collective) -> String {
        format!("Idle_{op}")
    }
    fn bcast(&self, _: &mut [u8], _: usize) -> Result<()> {
        Ok(())
    }
    fn scatter(&self, _: &[u8], _: &mut [u8], _: usize) -> Result<()> {
        Ok(())
    }
    fn gather(&self, _: &[u8], _: &mut [u8], _: usize) -> Result<()> {
        Ok(())
    }
    fn allgather(&self, _: &[u8], _: &mut [u8]) -> Result<()> {
        Ok(())
    }
    fn alltoall(&self, _: &[u8], _: &mut [u8]) -> Result<()> {
        Ok(())
    }
    fn reduce(&self, _: Dtype, _: Builtin, _: &[u8], _: &mut [u8], _: usize) -> Result<()> {
        Ok(())
    }
    fn allreduce(&self, _: Dtype, _: Builtin, _: &[u8], _: &mut [u8]) -> Result<()> {
        Ok(())
    }
    fn scan(&self, _: Dtype, _: Builtin, _: &[u8], _: &mut [u8], _: bool) -> Result<()> {
        Ok(())
    }
    fn reduce_scatter(&self, _: Dtype, _: Builtin, _: &[u8], _: &mut [u8]) -> Result<()> {
        Ok(())
    }
    fn varied(
        &self,
        _: Collective,
        _: (&[u8], &mut [u8]),
        _: (&[usize], &[usize]),
        _: usize,
    ) -> Result<()> {
        Ok(())
    }
    fn barrier(&self) -> Result<()> {
        Ok(())
    }
}

fn case(id: &str, bytes: usize) -> Case {
    Case {
        imp: id.parse().unwrap(),
        bytes,
        root: 1,
    }
}

#[test]
fn a_library_that_disagrees_with_autocoll_fails_every_non_empty_case() {
    let ids = [
        "bcast:binomial",
        "scatter:binary",
        "gather:chain",
        "allgather:ring",
        "reduce:binomial",
        "allreduce:ring",
        "alltoall:bruck",
        "scan:linear",
        "exscan:recursive-doubling",
        "reduce-scatter:ring",
    ];
    let cases: Vec<Case> = ids.iter().map(|id| case(id, 64)).collect();
    let config = Config {
        dtype: Dtype::I32,
        ..Config::default()
    };
    let per_rank = local::run(3, |mut comm| {
        check::run_compared(&mut comm, &cases, &config, Some(&Idle))
    });
    let failures: Vec<_> = per_rank.into_iter().flatten().collect();
    for id in ids {
        let op = id.split(':').next().unwrap();
        let theirs = failures
            .iter()
            .find(|f| f.imp == id)
            .unwrap_or_else(|| panic!("{id} passed"));
        assert!(
            theirs
                .reason
                .contains(&format!("autocoll vs Idle_{op} result")),
            "{}",
            theirs.reason
        );
    }
}

#[test]
fn empty_cases_agree_with_any_library() {
    let cases = [
        case("bcast:flat", 0),
        case("allreduce:recursive-doubling", 0),
    ];
    let per_rank = local::run(2, |mut comm| {
        check::run_compared(&mut comm, &cases, &Config::default(), Some(&Idle))
    });
    assert!(per_rank.iter().all(Vec::is_empty), "{per_rank:?}");
}
