use super::*;
use crate::comm::sim::{self, Model};

/// A model whose numbers the probe should read back: processor time
/// left out, so that only the network counts.
fn network(ranks_per_host: usize) -> Model {
    Model {
        ranks_per_host,
        cpu_scale: 0.0,
        ..Model::default()
    }
}

fn near(got: f64, want: f64, within: f64) -> bool {
    (got - want).abs() <= within * want
}

#[test]
fn the_probe_reads_the_simulated_links_latency_and_time_per_byte_on_every_rank() {
    let model = network(1);
    let links = sim::run(8, &model, |mut c| probe(&mut c).unwrap());
    let link = links[0].expect("a link");
    assert!(links.iter().all(|l| *l == Some(link)), "{links:?}");
    let per_byte = model.host_ns_per_byte * 1e-9;
    assert!(near(link.s_per_byte, per_byte, 0.05), "{link:?}");
    // A small message pays the wire's latency and both ends' overheads.
    let latency = (model.latency_ns + 2.0 * model.overhead_ns) * 1e-9;
    assert!(near(link.latency_s, latency, 0.10), "{link:?}");
    assert!(link.local_s_per_byte < link.s_per_byte / 10.0, "{link:?}");
}

#[test]
fn on_one_host_the_probe_reads_the_time_per_byte_within_it() {
    let model = network(4);
    let links = sim::run(4, &model, |mut c| probe(&mut c).unwrap());
    let link = links[0].expect("a link");
    let per_byte = model.local_ns_per_byte * 1e-9;
    assert!(near(link.local_s_per_byte, per_byte, 0.10), "{link:?}");
    assert!(link.s_per_byte > link.local_s_per_byte * 10.0, "{link:?}");
}

#[test]
fn one_rank_has_nothing_to_probe() {
    let links = sim::run(1, &network(1), |mut c| probe(&mut c).unwrap());
    assert_eq!(links, vec![None]);
}

#[test]
fn a_result_of_the_wrong_length_is_refused_with_its_length() {
    let err = decode(&[0u8; 20]).unwrap_err().to_string();
    assert!(err.contains("20 bytes"), "{err}");
    assert_eq!(decode(&[]).unwrap(), None);
    let link = Link::of_pair(1e-5, 8e-8, true);
    assert_eq!(decode(&encode(Some(link))).unwrap(), Some(link));
}
