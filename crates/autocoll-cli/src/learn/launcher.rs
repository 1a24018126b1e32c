//! What a launcher's arguments say of a job before it runs (its ranks, its
//! hosts), and the arguments that place it by a learned mapping. Open
//! MPI's `mpirun` and MPICH's `mpiexec` spell them alike enough for one
//! reader: `-n`/`-np`, `--hostfile`/`-machinefile`/`-f`, `--host`/`-hosts`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::manifest::Host;

/// Options whose value is the number of ranks.
const RANKS: &[&str] = &["-n", "-np", "--n", "--np", "-c"];
/// Options whose value is a file of hosts.
const HOSTFILES: &[&str] = &[
    "--hostfile",
    "-hostfile",
    "--machinefile",
    "-machinefile",
    "--default-hostfile",
    "-f",
];
/// Options whose value is a list of hosts.
const HOSTLISTS: &[&str] = &["--host", "-host", "-H", "-hosts", "--hosts"];

/// Options whose value places the ranks.
const RANKFILES: &[&str] = &["--rankfile", "-rankfile", "-rf"];

/// Each option among `args` (the launcher's own, before the program) that
/// this module reads, with its value, given as `-n 4` or `-n=4`. Only
/// these are looked for: which other options take a value, the launcher
/// alone knows.
fn options(args: &[OsString]) -> Vec<(String, String)> {
    let known = |name: &str| {
        [RANKS, HOSTFILES, HOSTLISTS, RANKFILES]
            .iter()
            .any(|list| list.contains(&name))
    };
    let mut out = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        let arg = arg.to_string_lossy();
        match arg.split_once('=') {
            Some((name, value)) if known(name) => out.push((name.into(), value.into())),
            None if known(&arg) => {
                if let Some(value) = args.get(i + 1) {
                    out.push((arg.into_owned(), value.to_string_lossy().into_owned()));
                }
            }
            _ => {}
        }
    }
    out
}

/// The ranks `args` ask for, when they say.
pub fn ranks(args: &[OsString]) -> Option<usize> {
    options(args)
        .into_iter()
        .rev()
        .find(|(name, _)| RANKS.contains(&name.as_str()))
        .and_then(|(_, value)| value.parse().ok())
}

/// The hosts `args` name (a hostfile, read from `cwd`, or a host list),
/// with their slots; `None` when they name none.
pub fn hosts(args: &[OsString], cwd: &Path) -> Result<Option<Vec<Host>>, String> {
    let mut found = None;
    for (name, value) in options(args) {
        if HOSTFILES.contains(&name.as_str()) {
            let path = cwd.join(&value);
            let text = std::fs::read_to_string(&path)
                .map_err(|e| format!("{name} {value}: reading {}: {e}", path.display()))?;
            found = Some(hostfile(&text, &path.display().to_string())?);
        } else if HOSTLISTS.contains(&name.as_str()) {
            found = Some(host_list(&value)?);
        }
    }
    Ok(found)
}

/// A hostfile in Open MPI's form (`host slots=N`) or MPICH's (`host:N`),
/// one host a line, `#` comments; a host named twice adds its slots.
pub fn hostfile(text: &str, origin: &str) -> Result<Vec<Host>, String> {
    let mut hosts = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else { continue };
        let at = |why: String| format!("{origin}:{}: {why}", n + 1);
        let (name, mut slots) = name_slots(first).map_err(at)?;
        for w in words {
            if let Some(v) = w.strip_prefix("slots=") {
                slots = count(v).map_err(at)?;
            }
        }
        add(&mut hosts, name, slots);
    }
    Ok(hosts)
}

/// `a,b:2,a`: each name one slot unless `:N` says.
fn host_list(text: &str) -> Result<Vec<Host>, String> {
    let mut hosts = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, slots) = name_slots(item)?;
        add(&mut hosts, name, slots);
    }
    Ok(hosts)
}

fn name_slots(word: &str) -> Result<(&str, usize), String> {
    match word.split_once(':') {
        Some((name, n)) => Ok((name, count(n)?)),
        None => Ok((word, 1)),
    }
}

fn count(text: &str) -> Result<usize, String> {
    text.parse()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("`{text}` is not a number of slots"))
}

fn add(hosts: &mut Vec<Host>, name: &str, slots: usize) {
    match hosts.iter_mut().find(|h| h.name == name) {
        Some(h) => h.slots += slots,
        None => hosts.push(Host {
            name: name.into(),
            slots,
            ..Host::default()
        }),
    }
}

/// Whether `args` place the ranks themselves (a rankfile).
pub fn places_itself(args: &[OsString]) -> bool {
    options(args)
        .iter()
        .any(|(name, _)| RANKFILES.contains(&name.as_str()))
}

/// `args` with the placement `file` in force: Open MPI's `--rankfile
/// FILE` in front; for MPICH, `-f FILE` in place of the hostfile they name
/// (Hydra takes one), or in front.
pub fn placed(args: &[OsString], mpich: bool, file: &Path) -> Vec<OsString> {
    let file: OsString = PathBuf::from(file).into();
    if !mpich {
        let mut out: Vec<OsString> = vec!["--rankfile".into(), file];
        out.extend(args.iter().cloned());
        return out;
    }
    let mut out: Vec<OsString> = vec!["-f".into(), file];
    let mut skip = false;
    for arg in args {
        let text = arg.to_string_lossy();
        let name = text.split_once('=').map_or(&*text, |(n, _)| n);
        if std::mem::take(&mut skip) {
            continue;
        }
        if HOSTFILES.contains(&name) || HOSTLISTS.contains(&name) {
            skip = !text.contains('=');
            continue;
        }
        out.push(arg.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn named(hosts: &[Host]) -> Vec<(&str, usize)> {
        hosts.iter().map(|h| (h.name.as_str(), h.slots)).collect()
    }

    #[test]
    fn ranks_are_read_in_either_spelling() {
        assert_eq!(ranks(&os(&["--oversubscribe", "-n", "16"])), Some(16));
        assert_eq!(ranks(&os(&["-np=8"])), Some(8));
        assert_eq!(ranks(&os(&["--bind-to", "none"])), None);
    }

    #[test]
    fn hostfiles_of_both_libraries_read_alike() {
        let open = hostfile("# hosts\nh0 slots=2\nh1 slots=2 max_slots=4\nh0\n", "f").unwrap();
        assert_eq!(named(&open), [("h0", 3), ("h1", 2)]);
        let mpich = hostfile("h0:2\nh1:2\n", "f").unwrap();
        assert_eq!(named(&mpich), [("h0", 2), ("h1", 2)]);
    }

    #[test]
    fn a_bad_slot_count_names_the_line() {
        let err = hostfile("h0 slots=2\nh1 slots=x\n", "hf").unwrap_err();
        assert!(err.starts_with("hf:2:"), "{err}");
    }

    #[test]
    fn host_lists_count_a_slot_per_name() {
        let dir = Path::new("/");
        let h = hosts(&os(&["-H", "a,b:2,a"]), dir).unwrap().unwrap();
        assert_eq!(named(&h), [("a", 2), ("b", 2)]);
        assert_eq!(hosts(&os(&["-n", "2"]), dir).unwrap(), None);
    }

    #[test]
    fn open_mpi_gets_the_rankfile_in_front() {
        let out = placed(&os(&["-n", "4"]), false, Path::new("/d/rankfile"));
        assert_eq!(out, os(&["--rankfile", "/d/rankfile", "-n", "4"]));
    }

    #[test]
    fn mpich_gets_the_machinefile_in_place_of_its_hostfile() {
        let args = os(&["-f", "hosts", "-n", "4", "-hosts=a,b"]);
        let out = placed(&args, true, Path::new("/d/machinefile"));
        assert_eq!(out, os(&["-f", "/d/machinefile", "-n", "4"]));
    }

    #[test]
    fn a_rankfile_given_is_seen() {
        assert!(places_itself(&os(&["--rankfile", "r", "-n", "2"])));
        assert!(!places_itself(&os(&["-n", "2"])));
    }
}
