//! `AUTOCOLL_TRACE=DIR` turns recording on for `local::run` without a
//! change to the program, sized by `AUTOCOLL_TRACE_EVENTS`. (A test binary
//! of its own: it sets the process's environment.)

use autocoll::trace::format::Reader;
use autocoll::trace::{file_of, ENV_TRACE, ENV_TRACE_EVENTS};
use autocoll::{local, Op};

#[test]
fn autocoll_trace_records_every_rank_of_a_local_run() {
    let dir = std::env::temp_dir().join(format!("autocoll-trace-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::env::set_var(ENV_TRACE, &dir);
    std::env::set_var(ENV_TRACE_EVENTS, "2K");
    local::run(3, |mut comm| {
        let mut sum = [0.0f64; 3];
        for _ in 0..5 {
            comm.allreduce(&[1.0; 3], &mut sum, &Op::SUM).unwrap();
        }
        assert_eq!(sum, [3.0; 3]);
    });
    for rank in 0..3 {
        let mut r = Reader::open(&file_of(&dir, rank)).unwrap();
        assert_eq!(r.header().capacity_events, 2048);
        let mut calls = 0;
        while let Some(call) = r.next_call().unwrap() {
            calls += 1;
            assert!(call.events.len() >= 2);
        }
        assert_eq!(calls, 5, "rank {rank}");
    }
    // A bad size is refused with the variable named, and the job runs untraced.
    std::env::set_var(ENV_TRACE_EVENTS, "lots");
    let ran = local::run(2, |mut comm| {
        comm.barrier().is_ok() && comm.recorder().is_none()
    });
    assert_eq!(ran, [true, true]);
    let err = autocoll::trace::TraceOptions::from_env().unwrap_err();
    assert!(
        err.to_string().contains("AUTOCOLL_TRACE_EVENTS=lots"),
        "{err}"
    );
    std::env::remove_var(ENV_TRACE);
    std::env::remove_var(ENV_TRACE_EVENTS);
    std::fs::remove_dir_all(&dir).unwrap();
}
