//! A tcp job whose ranks are threads of this process: real sockets and
//! the tcp transport's progress, without launching processes. Shared by
//! the tests and the benches (`#[path]`).

use std::time::Duration;

use autocoll::comm::tcp::{setup, wire::Token, Config, Tcp};
use autocoll::Communicator;

/// Runs `body` on every rank of an `n`-rank tcp job of threads, each rank
/// waiting at most `timeout` for a peer; the ranks' results in rank order.
pub fn over_tcp<R: Send>(
    n: usize,
    timeout: Duration,
    body: impl Fn(Communicator) -> R + Sync,
) -> Vec<R> {
    let token = Token::random().unwrap();
    let mut zero = Config::local(0, n, "127.0.0.1:0".into(), token);
    zero.timeout = timeout;
    let listener = setup::bind(&zero).unwrap();
    zero.root = listener.local_addr().unwrap().to_string();
    let mut listener = Some(listener);
    let body = &body;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|rank| {
                let mut config = zero.clone();
                config.rank = rank;
                let listener = if rank == 0 { listener.take() } else { None };
                s.spawn(move || {
                    let tcp = match listener {
                        Some(l) => Tcp::connect_on(&config, l),
                        None => Tcp::connect(&config),
                    };
                    body(Communicator::new(Box::new(tcp.unwrap())))
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}
