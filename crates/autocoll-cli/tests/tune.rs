//! `autocoll tune` end to end on local threads and over tcp on this
//! host, at sizes small enough to finish in seconds on a loaded machine.

mod support;

use std::path::Path;

use autocoll::select::Table;
use autocoll::Collective;
use support::{autocoll, succeeded, tempdir};

fn tune(dir: &Path, extra: &[&str]) -> std::process::Output {
    autocoll()
        .args([
            "tune",
            "--op",
            "bcast,allreduce",
            "-n",
            "2,3",
            "--bytes",
            "1K,4K",
        ])
        .args([
            "--impl",
            "bcast:flat,bcast:chain:seg=1K,allreduce:ring,allreduce:recursive-doubling",
        ])
        .args(["--max-reps", "5", "--calls", "4", "--warmup", "2"])
        // ol-i always yields a median; truth (the default on one host) may
        // discard every call of a point when threads outnumber free cores,
        // and this test is about the table, not the method.
        .args(["--method", "ol-i"])
        .arg("--out")
        .arg(dir.join("t.toml"))
        .args(extra)
        .output()
        .expect("autocoll runs")
}

/// The table's lookups return the winners the partial results record.
#[test]
fn tune_writes_a_table_of_the_measured_winners_and_resumes() {
    let dir = tempdir("tune");
    let (ompi, mpich) = (dir.join("o.rules"), dir.join("m.json"));
    let exports = [
        "--export-ompi",
        ompi.to_str().unwrap(),
        "--export-mpich",
        mpich.to_str().unwrap(),
    ];
    let out = tune(&dir, &exports);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&ompi).unwrap().lines().count() > 3);
    assert!(std::fs::read_to_string(&mpich)
        .unwrap()
        .contains("collective="));
    let table = Table::load(&dir.join("t.toml")).expect("a loadable tuning file");
    let partial = std::fs::read_to_string(dir.join("t.toml.partial.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&partial).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2 * 2 * 2 * 2, "every (op, ranks, bytes, impl)");
    for r in rows {
        let (op, p, bytes) = (
            r["op"].as_str().unwrap(),
            r["ranks"].as_u64().unwrap() as usize,
            r["bytes"].as_u64().unwrap() as usize,
        );
        // Raced: the winner is the fastest of those still in at the end.
        assert!(r["race"]["ending"].is_string(), "{r}");
        let fastest = rows
            .iter()
            .filter(|o| o["op"] == r["op"] && o["ranks"] == r["ranks"] && o["bytes"] == r["bytes"])
            .filter(|o| o["median_s"].is_f64() && o["race"]["live"] == true)
            .filter(|o| o["race"]["same_as"].is_null())
            .min_by(|a, b| {
                a["median_s"]
                    .as_f64()
                    .unwrap()
                    .total_cmp(&b["median_s"].as_f64().unwrap())
            })
            .unwrap();
        let op: Collective = op.parse().unwrap();
        let got = table
            .lookup(op, p, bytes)
            .expect("a rule for every measured point");
        assert_eq!(got.to_string(), fastest["impl"].as_str().unwrap());
    }
    // A resumed sweep with everything done measures nothing new.
    let again = tune(&dir, &["--resume"]);
    assert!(again.status.success());
    let after = std::fs::read_to_string(dir.join("t.toml.partial.json")).unwrap();
    assert_eq!(after, partial, "no point measured twice");
    assert!(String::from_utf8_lossy(&again.stderr).contains("resuming: 16 points done"));
}

/// A sweep interrupted inside a race goes on with that race: the saved
/// repetitions are the first of the final ones, and the race's rounds go
/// on from where they were.
#[test]
fn a_resumed_tune_goes_on_with_the_saved_race() {
    let dir = tempdir("tune-race-resume");
    let imps = ["bcast:flat", "bcast:chain:seg=1K"];
    let saved = serde_json::json!({
        "schema": "autocoll.tune-partial/1",
        "rows": [],
        "races": [{
            "op": "bcast", "ranks": 2, "bytes": 4096, "impls": imps,
            "race": {"reps": [[0.25], [0.5]], "live": [true, true], "rounds": 1, "ending": null},
        }],
    });
    std::fs::write(dir.join("t.toml.partial.json"), saved.to_string()).unwrap();
    succeeded(
        autocoll()
            .args(["tune", "--op", "bcast", "-n", "2", "--bytes", "4K"])
            .args(["--impl", &imps.join(",")])
            .args(["--max-reps", "5", "--calls", "2", "--warmup", "1"])
            .args(["--method", "ol-i", "--resume", "--out"])
            .arg(dir.join("t.toml")),
    );
    let doc = partial(&dir);
    assert_eq!(doc["races"].as_array().unwrap().len(), 0, "the race ended");
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for (row, first) in rows.iter().zip([0.25, 0.5]) {
        assert_eq!(row["raw_s"][0], first, "{row}");
        assert!(row["race"]["rounds"].as_u64().unwrap() >= 2, "{row}");
    }
}

/// Candidates that send the same messages are raced as one: on 4 ranks
/// the 3-ary tree is the flat tree, and carries its figures.
#[test]
fn a_race_measures_candidates_that_send_the_same_messages_once() {
    let dir = tempdir("tune-alike");
    succeeded(
        autocoll()
            .args(["tune", "--op", "bcast", "-n", "4", "--bytes", "1K"])
            .args(["--impl", "bcast:flat,bcast:kary:k=3,bcast:chain"])
            .args(["--max-reps", "5", "--calls", "2", "--warmup", "1"])
            .args(["--method", "ol-i", "--out"])
            .arg(dir.join("t.toml")),
    );
    let doc = partial(&dir);
    let rows = doc["rows"].as_array().unwrap();
    let by = |id: &str| rows.iter().find(|r| r["impl"] == id).unwrap();
    assert_eq!(rows.len(), 3, "a row for every candidate");
    let (flat, kary) = (by("bcast:flat"), by("bcast:kary:k=3"));
    assert_eq!(kary["race"]["same_as"], "bcast:flat", "{kary}");
    assert_eq!(
        kary["raw_s"], flat["raw_s"],
        "the figures of the one measured"
    );
    assert!(by("bcast:chain")["race"]["same_as"].is_null());
    let table = Table::load(&dir.join("t.toml")).unwrap();
    let winner = table.lookup(Collective::Bcast, 4, 1024).unwrap();
    assert_ne!(
        winner.to_string(),
        "bcast:kary:k=3",
        "a carried row never wins"
    );
}

#[test]
fn tune_exhaustive_measures_every_candidate_in_every_round() {
    let dir = tempdir("tune-exhaustive");
    let out = tune(&dir, &["--exhaustive"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let partial = std::fs::read_to_string(dir.join("t.toml.partial.json")).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&partial).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 16);
    // Interleaved as a race is, but none dropped: every candidate ran
    // every one of --max-reps rounds (ol-i keeps every repetition).
    for r in rows {
        assert_eq!(r["race"]["ending"], "exhausted", "{r}");
        assert_eq!(r["reps"], 5, "{r}");
    }
    // Two candidates a point are a duel: each compared with
    // the other round by round, and the one behind there is not the
    // point's winner.
    for point in rows.chunks(2) {
        let [a, b] = point else { unreachable!() };
        assert_eq!(a["race"]["paired"]["against"], b["impl"], "{a}");
        assert_eq!(b["race"]["paired"]["against"], a["impl"], "{b}");
        let ratio = a["race"]["paired"]["ratio"].as_f64().unwrap();
        assert_eq!(a["race"]["live"], ratio <= 1.0, "{a}");
        assert_eq!(b["race"]["live"], ratio > 1.0, "{b}");
    }
}

#[test]
fn tune_without_candidates_for_an_op_is_a_usage_error() {
    let dir = tempdir("tune-none");
    let out = autocoll()
        .args([
            "tune",
            "--op",
            "bcast,reduce",
            "--impl",
            "bcast:flat",
            "--out",
        ])
        .arg(dir.join("t.toml"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no candidates for reduce"));
}

/// The partial file of the sweep written to `dir/t.toml`.
fn partial(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("t.toml.partial.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// Where the ranks outnumber the cores, tune says so once and
/// names the methods whose premise fails; every point still gets a winner
/// measured with enough repetitions: by truth, flagged `crowded`, or where
/// truth kept too few, by the fallback method, flagged `fallback`.
#[test]
fn tune_on_crowded_cores_still_measures_every_winner_and_flags_it() {
    let dir = tempdir("tune-crowded");
    let out = autocoll()
        .env("AUTOCOLL_CORES", "2")
        .args(["tune", "--op", "allreduce", "-n", "6", "--bytes", "1K,64K"])
        .args(["--impl", "allreduce:ring,allreduce:recursive-doubling"])
        .args(["--max-reps", "8", "--calls", "4", "--warmup", "2", "--out"])
        .arg(dir.join("t.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warning = "6 ranks on 2 cores of one machine";
    assert_eq!(stderr.matches(warning).count(), 1, "{stderr}");
    assert!(stderr.contains("truth assumes that the ranks enter each call together"));
    let doc = partial(&dir);
    let rows = doc["rows"].as_array().unwrap();
    let table = Table::load(&dir.join("t.toml")).expect("a tuning file");
    for bytes in [1024, 65536] {
        let winner = table.lookup(Collective::Allreduce, 6, bytes).unwrap();
        let row = rows
            .iter()
            .find(|r| r["bytes"] == bytes && r["impl"] == winner.to_string().as_str())
            .unwrap();
        assert!(row["reps"].as_u64().unwrap() >= 3, "{row}");
        let flags = row["flags"].as_array().unwrap();
        match row["method"].as_str().unwrap() {
            "truth" => assert!(flags.contains(&"crowded".into()), "{row}"),
            "barrier" => {
                assert!(flags.contains(&"fallback".into()), "{row}");
                assert!(
                    stderr.contains("racing them again with barrier"),
                    "{stderr}"
                );
            }
            other => panic!("measured with {other}: {row}"),
        }
    }
}

/// Over tcp each point is measured by a job of its own (what
/// the points before it did must not rank its candidates): every point
/// once (a job that measured more than its point would report rows
/// twice), and the crowded cores and the ranks' binding said once, not
/// once a job.
#[test]
fn tune_over_tcp_measures_each_point_once_in_a_job_of_its_own() {
    let dir = tempdir("tune-job-per-point");
    let out = autocoll()
        .env("AUTOCOLL_CORES", "2")
        .args(["tune", "--transport", "tcp", "--op", "allreduce", "-n", "3"])
        .args(["--bytes", "1K,4K,16K"])
        .args(["--impl", "allreduce:ring,allreduce:recursive-doubling"])
        .args(["--max-reps", "6", "--calls", "4", "--warmup", "2", "--out"])
        .arg(dir.join("t.toml"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("3 ranks on 2 cores").count(), 1, "{stderr}");
    // Every job binds its ranks alike, and says so once.
    let bound = "ranks bound to cores round robin (--bind-to auto): core ";
    assert_eq!(stderr.matches(bound).count(), 1, "{stderr}");
    let doc = partial(&dir);
    let mut points: Vec<(u64, String)> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["bytes"].as_u64().unwrap(), r["impl"].to_string()))
        .collect();
    points.sort();
    let measured = points.len();
    points.dedup();
    assert_eq!(measured, points.len(), "a point measured twice: {points:?}");
    assert_eq!(measured, 6, "{points:?}");
    let refused = autocoll()
        .args(["tune", "--op", "bcast", "-n", "2", "--bytes", "1K"])
        .args(["--point", "bcast:1024", "--out"])
        .arg(dir.join("u.toml"))
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("are for the ranks of a tcp job"),
        "{stderr}"
    );
}

/// Over tcp, a race that goes to a final has its two finalists
/// measured again in jobs of their own, and each finalist's row says how
/// they fared there; no other row does.
#[test]
fn a_final_over_tcp_is_settled_in_jobs_of_its_own() {
    let dir = tempdir("tune-final-jobs");
    // Two rounds of two close candidates at eleven sizes: some race is
    // left undecided and goes to its final. Which does is chance; a sweep
    // in which none did (a few in a hundred; a sweep takes under a second)
    // is run again, up to ten times.
    let mut settled = 0;
    for _ in 0..10 {
        let _ = std::fs::remove_file(dir.join("t.toml.partial.json"));
        let out = autocoll()
            .args(["tune", "--transport", "tcp", "--op", "bcast", "-n", "2"])
            .args(["--bytes", "4K,6K,8K,12K,16K,24K,32K,48K,64K,96K,128K"])
            .args(["--method", "barrier"])
            .args(["--impl", "bcast:chain:seg=1K,bcast:chain:seg=2K"])
            .args(["--min-reps", "2", "--max-reps", "2", "--final-rounds", "6"])
            .args([
                "--final-jobs",
                "2",
                "--calls",
                "4",
                "--warmup",
                "2",
                "--out",
            ])
            .arg(dir.join("t.toml"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let doc = partial(&dir);
        let rows = doc["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 22, "{rows:?}");
        settled = rows.iter().filter(|r| settled_final(r)).count();
        if settled > 0 {
            break;
        }
    }
    assert!(
        settled >= 2 && settled % 2 == 0,
        "{settled} finalists settled"
    );
}

/// Checks one row of a sweep run with `--final-jobs 2`: a finalist's row
/// (`race.paired`) and only such a row says how the two fared in two more
/// jobs, and the median job's faster one is the one left in. True for a
/// finalist's.
fn settled_final(r: &serde_json::Value) -> bool {
    let mark = &r["race"];
    let (paired, across) = (&mark["paired"], &mark["across"]);
    assert_eq!(paired.is_null(), across.is_null(), "{r}");
    if across.is_null() {
        return false;
    }
    assert_eq!(across["jobs"], 2, "{r}");
    let [lo, hi] = [0, 1].map(|i| across["range"][i].as_f64().unwrap());
    let ratio = across["ratio"].as_f64().unwrap();
    assert!(lo <= ratio && ratio <= hi, "{r}");
    assert_eq!(mark["live"].as_bool().unwrap(), ratio < 1.0, "{r}");
    true
}

/// Over tcp a point's race runs in jobs of a few rounds, each
/// going on with the race the last one saved: the first job stops before
/// any candidate can be dropped (--min-reps 3: after two rounds), each
/// after it runs --rounds-per-job rounds, and every repetition of every
/// job is kept; with --rounds-per-job 0 the race is one job.
#[test]
fn a_race_over_tcp_runs_in_jobs_of_a_few_rounds() {
    let dir = tempdir("tune-race-jobs");
    for (per_job, name) in [("2", "t.toml"), ("0", "u.toml")] {
        let out = autocoll()
            .args(["tune", "--transport", "tcp", "--op", "bcast", "-n", "2"])
            .args(["--bytes", "16K", "--method", "barrier"])
            .args(["--impl", "bcast:chain:seg=1K,bcast:chain:seg=2K"])
            .args(["--min-reps", "3", "--max-reps", "7", "--final-rounds", "0"])
            .args(["--final-jobs", "0"])
            .args(["--rounds-per-job", per_job])
            .args(["--calls", "4", "--warmup", "2", "--out"])
            .arg(dir.join(name))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let text = std::fs::read_to_string(dir.join(format!("{name}.partial.json"))).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["races"].as_array().unwrap().len(), 0, "the race ended");
        let rows = doc["rows"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{rows:?}");
        for row in rows {
            let mark = &row["race"];
            let rounds = mark["rounds"].as_u64().unwrap();
            let jobs = mark["jobs"].as_u64().unwrap();
            // Rounds 1-2 in the first job, then two a job.
            let expected = match per_job {
                "0" => 1,
                _ => 1 + (rounds - 2).div_ceil(2),
            };
            assert!(rounds >= 3, "{row}");
            assert_eq!(jobs, expected, "{row}");
            if mark["live"].as_bool().unwrap() {
                // barrier keeps every repetition, from every job.
                assert_eq!(
                    row["raw_s"].as_array().unwrap().len() as u64,
                    rounds,
                    "{row}"
                );
            }
        }
    }
}

/// A bad AUTOCOLL_CORES is refused with what was wrong.
#[test]
fn a_bad_core_count_is_refused() {
    let dir = tempdir("tune-bad-cores");
    let out = autocoll()
        .env("AUTOCOLL_CORES", "two")
        .args(["tune", "--op", "bcast", "-n", "2", "--bytes", "1K"])
        .args(["--impl", "bcast:flat", "--out"])
        .arg(dir.join("t.toml"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("AUTOCOLL_CORES=`two`"), "{stderr}");
}
