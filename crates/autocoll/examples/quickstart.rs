//! The README's library example: four ranks as threads, an allreduce chosen
//! by the selector and a broadcast with a named implementation.
//!
//! Run: `cargo run -p autocoll --example quickstart`

use autocoll::{local, Op};

fn main() {
    let sums = local::run(4, |mut comm| {
        let mine = vec![comm.rank() as f64; 1000];
        let mut total = vec![0.0; 1000];
        comm.allreduce(&mine, &mut total, &Op::SUM).unwrap(); // the selector picks
        let imp = "bcast:chain:seg=16K".parse().unwrap();
        let mut buf = vec![0u8; 1 << 20];
        comm.bcast_with(&imp, &mut buf, 0).unwrap(); // or name the implementation
        total[0]
    });
    assert_eq!(sums, vec![6.0; 4]);
    println!("every rank holds the sum 0+1+2+3 = {}", sums[0]);
}
