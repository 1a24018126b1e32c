//! The pure parts of `mpirun` and `lib-path` on made-up inputs.

use super::*;

fn os(items: &[&str]) -> Vec<OsString> {
    items.iter().map(OsString::from).collect()
}

fn args(opts: &[&str]) -> Args {
    use clap::Parser;
    #[derive(Parser)]
    struct Top {
        #[command(flatten)]
        a: Args,
    }
    let top = Top::try_parse_from(std::iter::once("mpirun").chain(opts.iter().copied()))
        .unwrap_or_else(|e| panic!("{e}"));
    top.a
}

fn usage<T>(r: Result<T, Failure>) -> String {
    match r {
        Err(Failure::Usage(m)) => m,
        Err(Failure::Run(e)) => panic!("not a usage error: {e}"),
        Ok(_) => panic!("accepted"),
    }
}

#[test]
fn arguments_come_in_order_one_x_per_variable() {
    let a = args(&[
        "--select",
        "fixed:bcast:mpi, allreduce:ring",
        "--state",
        "s.json",
        "--trace",
        "./tr",
        "--balance",
        "sort",
        "--pattern",
        "/abs/p.json",
        "--verbose",
        "--",
        "-n",
        "3",
        "./prog",
        "a b",
    ]);
    let vars = settings(&a, Path::new("/home/u/run")).ok().unwrap();
    let line = command_line(
        Mpi::Openmpi,
        Path::new("/lib/x.so"),
        &vars,
        false,
        None,
        &a.rest,
    );
    assert_eq!(
        line,
        os(&[
            "-x",
            "LD_PRELOAD=/lib/x.so",
            "-x",
            "AUTOCOLL_SELECT=fixed:bcast:mpi, allreduce:ring",
            "-x",
            "AUTOCOLL_STATE=/home/u/run/s.json",
            "-x",
            "AUTOCOLL_TRACE=/home/u/run/tr",
            "-x",
            "AUTOCOLL_BALANCE=sort",
            "-x",
            "AUTOCOLL_PATTERN=/abs/p.json",
            "-x",
            "AUTOCOLL_VERBOSE=1",
            "-n",
            "3",
            "./prog",
            "a b",
        ])
    );
}

#[test]
fn without_options_sets_only_the_preload_and_keeps_an_old_one() {
    let a = args(&["--", "-n", "2", "prog", "--", "x"]);
    let vars = settings(&a, Path::new("/w")).ok().unwrap();
    assert!(vars.is_empty());
    let line = command_line(
        Mpi::Openmpi,
        Path::new("/l.so"),
        &vars,
        false,
        Some(OsStr::new("/other.so")),
        &a.rest,
    );
    assert_eq!(
        line,
        os(&[
            "-x",
            "LD_PRELOAD=/l.so:/other.so",
            "-n",
            "2",
            "prog",
            "--",
            "x"
        ])
    );
    let line = command_line(
        Mpi::Openmpi,
        Path::new("/l.so"),
        &[],
        false,
        Some(OsStr::new("")),
        &[],
    );
    assert_eq!(line, os(&["-x", "LD_PRELOAD=/l.so"]));
}

#[test]
fn allows_root_only_as_root_and_only_once() {
    let rest = os(&["-n", "2", "prog"]);
    let as_root = command_line(Mpi::Openmpi, Path::new("/l.so"), &[], true, None, &rest);
    assert_eq!(as_root[0], "--allow-run-as-root");
    assert_eq!(as_root.len(), 6);
    let as_user = command_line(Mpi::Openmpi, Path::new("/l.so"), &[], false, None, &rest);
    assert!(!as_user.iter().any(|a| a == "--allow-run-as-root"));
    let given = os(&["--allow-run-as-root", "-n", "2", "prog"]);
    let line = command_line(Mpi::Openmpi, Path::new("/l.so"), &[], true, None, &given);
    let count = line.iter().filter(|a| *a == "--allow-run-as-root").count();
    assert_eq!(count, 1);
    assert_eq!(line[..2], os(&["-x", "LD_PRELOAD=/l.so"])[..]);
}

#[test]
fn select_is_checked_as_the_library_does() {
    let cwd = Path::new("/nowhere");
    for ok in [
        "lottery",
        "native",
        " native ",
        "fixed:bcast:mpi",
        "fixed:bcast:binary:seg=8K,allreduce:mpi",
    ] {
        assert!(select(ok, cwd).is_ok(), "{ok}: {:?}", select(ok, cwd));
    }
    assert!(select("random", cwd)
        .unwrap_err()
        .contains("expected lottery"));
    assert!(select("fixed:bcast:tree", cwd)
        .unwrap_err()
        .contains("unknown algorithm"));
    assert!(select("fixed:bcast:flat,bcast:chain", cwd)
        .unwrap_err()
        .contains("two implementations for bcast"));
    let missing = select("table:t.toml", cwd).unwrap_err();
    assert!(missing.contains("/nowhere/t.toml"), "{missing}");
    let a = args(&["--select", "fixed:scan:flat", "--", "p"]);
    assert!(usage(settings(&a, cwd)).starts_with("--select fixed:scan:flat: "));
    let a = args(&["--balance", "mode=sideways", "--", "p"]);
    assert!(usage(settings(&a, cwd)).starts_with("--balance mode=sideways: "));
    let a = args(&["--model", "m.toml", "--", "p"]);
    let why = usage(settings(&a, cwd));
    assert!(
        why.starts_with("--model m.toml: ") && why.contains("/nowhere/m.toml"),
        "{why}"
    );
}

#[test]
fn select_table_is_read_and_made_absolute() {
    let dir = std::env::temp_dir().join(format!("autocoll-mpirun-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "not = [a tuning file").unwrap();
    assert!(select("table:bad.toml", &dir).is_err());
    std::fs::write(dir.join("t.toml"), "schema = \"autocoll.tuning/1\"\n").unwrap();
    let got = select("table:t.toml", &dir);
    let seeded = select("lottery:t.toml", &dir);
    assert!(select("lottery:bad.toml", &dir).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
    for (got, prefix) in [(got, "table:"), (seeded, "lottery:")] {
        let mut want = OsString::from(prefix);
        want.push(dir.join("t.toml"));
        assert_eq!(got, Ok(want));
    }
}

#[test]
fn a_launcher_of_the_other_mpi_and_files_that_are_not_the_library_are_refused() {
    let ompi =
        "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n";
    let mpich = "HYDRA build details:\n    Version:                                 4.0\n";
    assert!(launcher_of(Mpi::Openmpi, Path::new("mpirun"), ompi).is_ok());
    assert!(launcher_of(Mpi::Mpich, Path::new("mpiexec"), mpich).is_ok());
    let why = launcher_of(Mpi::Openmpi, Path::new("/usr/bin/mpirun"), mpich).unwrap_err();
    assert!(
        why.starts_with("/usr/bin/mpirun is not Open MPI's launcher"),
        "{why}"
    );
    assert!(
        why.contains("`HYDRA build details:` (that is MPICH's)"),
        "{why}"
    );
    assert!(why.contains("integers in MPICH"), "{why}");
    let why = launcher_of(Mpi::Mpich, Path::new("mpirun"), ompi).unwrap_err();
    assert!(why.contains("(that is Open MPI's)"), "{why}");
    assert!(launcher_of(Mpi::Openmpi, Path::new("x"), "")
        .unwrap_err()
        .contains("says nothing"));

    let lib = Path::new("/t/libautocoll_mpi.so");
    let ompi_lib = b"\x7fELF..libmpi.so.40\0MPI_Bcast\0MPI_Reduce\0";
    let mpich_lib = b"\x7fELF..libmpich.so.12\0MPI_Bcast\0MPI_Reduce\0";
    assert!(interposition(Mpi::Openmpi, lib, ompi_lib).is_ok());
    assert!(interposition(Mpi::Mpich, lib, mpich_lib).is_ok());
    let why = interposition(Mpi::Mpich, lib, ompi_lib).unwrap_err();
    assert!(
        why.contains("the interposition library for Open MPI, and the program's MPI is MPICH"),
        "{why}"
    );
    assert!(why.contains("scripts/build-mpich-lib"), "{why}");
    let why = interposition(Mpi::Openmpi, lib, b"\x7fELF..\0PMPI_Bcast\0MPI_Bcast_c").unwrap_err();
    assert!(
        why.contains("not autocoll's MPI interposition library"),
        "{why}"
    );
    assert!(why.contains("without the `mpi` feature"), "{why}");
    assert!(why.contains(Mpi::Openmpi.build()), "{why}");
}

#[test]
fn mpich_gets_genv_pairs_and_no_root_flag() {
    let vars = [("AUTOCOLL_VERBOSE", OsString::from("1"))];
    let rest = os(&["-n", "2", "prog"]);
    let line = command_line(Mpi::Mpich, Path::new("/m.so"), &vars, true, None, &rest);
    assert_eq!(
        line,
        os(&[
            "-genv",
            "LD_PRELOAD",
            "/m.so",
            "-genv",
            "AUTOCOLL_VERBOSE",
            "1",
            "-n",
            "2",
            "prog"
        ])
    );
}

#[test]
fn the_program_among_the_arguments_says_which_mpi() {
    let dir = std::env::temp_dir().join(format!("autocoll-which-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::write(dir.join("hosts"), "h1 slots=2\n").unwrap();
    std::fs::write(dir.join("wrap"), b"\x7fELF..libc.so.6\0").unwrap();
    std::fs::write(dir.join("app"), b"\x7fELF..libmpich.so.12\0libc.so.6").unwrap();
    std::fs::write(dir.join("bin/ompi_app"), b"\x7fELF..libmpi.so.40\0").unwrap();
    let path = dir.join("bin").into_os_string();
    let which = |rest: &[&str]| program_mpi(&os(rest), &dir, Some(&path));
    assert_eq!(
        which(&["-n", "2", "--hostfile", "hosts", "./wrap", "./app", "x"]),
        Some((5, dir.join("app"), Mpi::Mpich))
    );
    assert_eq!(
        which(&["-n", "2", "ompi_app"]),
        Some((2, dir.join("bin/ompi_app"), Mpi::Openmpi))
    );
    assert_eq!(which(&["-n", "2", "./wrap", "missing"]), None);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn library_is_found_by_flag_env_or_beside_the_executable() {
    let dir = std::env::temp_dir().join(format!("autocoll-lib-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("release")).unwrap();
    let beside = dir.join("release").join(Mpi::Openmpi.lib_name());
    std::fs::write(&beside, MARK).unwrap();
    std::fs::write(dir.join("other.so"), MARK).unwrap();
    let dirs = [dir.join("debug"), dir.join("release")];
    let found = |flag: Option<&str>, env: Option<&str>| {
        locate(
            Mpi::Openmpi,
            flag.map(Path::new),
            env.map(OsStr::new),
            &dirs,
            &dir,
        )
    };
    assert_eq!(found(None, None), Ok(beside.clone()));
    assert_eq!(found(None, Some("")), Ok(beside.clone()));
    assert_eq!(found(None, Some("other.so")), Ok(dir.join("other.so")));
    assert_eq!(
        found(Some("./other.so"), Some("/x.so")),
        Ok(dir.join("other.so"))
    );
    assert!(found(Some("gone.so"), None)
        .unwrap_err()
        .starts_with("--lib "));
    assert!(found(None, Some("gone.so"))
        .unwrap_err()
        .starts_with("AUTOCOLL_MPI_LIB "));
    std::fs::remove_file(&beside).unwrap();
    let why = found(None, None).unwrap_err();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(why.contains(Mpi::Openmpi.build()), "{why}");
    assert!(why.contains("release"), "{why}");
}

#[test]
fn an_installed_autocoll_looks_in_its_prefixs_lib_autocoll() {
    let dirs = search_dirs(Path::new("/opt/ac/bin"));
    assert_eq!(
        dirs,
        [
            PathBuf::from("/opt/ac/bin"),
            PathBuf::from("/opt/ac/lib/autocoll")
        ]
    );
}
