//! A cluster whose owner has ended is taken down by the next `cluster up`:
//! a killed test cannot run its own `cluster down`, and its namespaces
//! would otherwise stay until the next reboot.
//!
//! Needs root, as every cluster does; without it, it says why and does
//! nothing (CI runs as root, so there it runs).

use std::path::{Path, PathBuf};
use std::process::Output;

mod support;

use support::{autocoll, cannot_make_clusters};

/// A two-host cluster spec with a name and /24 of this process's own.
fn tiny(dir: &Path, tag: u32) -> (PathBuf, String) {
    let id = (std::process::id() + tag) % 100_000;
    let name = format!("o{id}");
    let text = format!(
        "name = \"{name}\"\nsubnet = \"10.66.{}.0/24\"\n\n[[switch]]\nname = \"sw0\"\n\n\
         [[host]]\nname = \"h0\"\nswitch = \"sw0\"\nslots = 1\nrate = \"100mbit\"\n\n\
         [[host]]\nname = \"h1\"\nswitch = \"sw0\"\nslots = 1\nrate = \"100mbit\"\n",
        id % 250
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).expect("spec written");
    (path, name)
}

fn cluster(action: &str, spec: &Path, out: &Path, owner: Option<u32>) -> Output {
    let mut cmd = autocoll();
    cmd.args(["cluster", action])
        .arg(spec)
        .arg("--out")
        .arg(out);
    if let Some(pid) = owner {
        cmd.args(["--owner", &pid.to_string()]);
    }
    cmd.output().expect("autocoll runs")
}

fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Takes a cluster down when dropped, however the test ends.
struct Down<'a>(&'a Path, &'a Path);

impl Drop for Down<'_> {
    fn drop(&mut self) {
        cluster("down", self.0, self.1, None);
    }
}

#[test]
fn the_next_cluster_up_takes_down_a_cluster_whose_owner_has_ended() {
    if let Some(why) = cannot_make_clusters() {
        eprintln!("skipped: {why}");
        return;
    }
    let dir = std::env::temp_dir().join(format!("autocoll-owner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (orphan, orphan_name) = tiny(&dir, 0);
    let (mine, _) = tiny(&dir, 1);
    let _orphan_down = Down(&orphan, &dir);
    let _mine_down = Down(&mine, &dir);

    // An owner that has ended: a child process, waited for.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let up = cluster("up", &orphan, &dir, Some(dead));
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    assert!(netns_exists(&format!("{orphan_name}-h0")));
    // Its spec file goes, as a killed test's temporary directory may.
    std::fs::remove_file(&orphan).unwrap();

    let me = std::process::id();
    let up = cluster("up", &mine, &dir, Some(me));
    let said = String::from_utf8_lossy(&up.stderr);
    assert!(up.status.success(), "{said}");
    assert!(
        !netns_exists(&format!("{orphan_name}-h0")) && !netns_exists(&format!("{orphan_name}-h1")),
        "the orphan is still up: {said}"
    );
    assert!(
        said.contains(&format!("took down cluster {orphan_name}"))
            && said.contains(&dead.to_string()),
        "{said}"
    );
    assert!(
        !dir.join(&orphan_name).exists(),
        "its hostfiles and agent are gone too"
    );

    // A cluster whose owner lives stays up through another `up`.
    let (third, _) = tiny(&dir, 2);
    let _third_down = Down(&third, &dir);
    let up = cluster("up", &third, &dir, Some(me));
    assert!(up.status.success());
    let mine_name = format!("o{}", (me + 1) % 100_000);
    assert!(
        netns_exists(&format!("{mine_name}-h0")),
        "a live owner's cluster was taken down"
    );
}
