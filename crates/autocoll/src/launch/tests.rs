use super::*;

#[test]
fn hostfiles_parse_with_slots_and_addresses() {
    let text =
            "# cluster\nh1 slots=2 addr=10.0.0.1\n\nh2 slots=3 max_slots=4 switch=sw0/sw1 # two\n127.0.0.1\n";
    let hosts = parse_hostfile(text, "hf").unwrap();
    assert_eq!(hosts.len(), 3);
    assert_eq!(hosts[0].slots, 2);
    assert_eq!(hosts[0].addr, Some(IpAddr::from([10, 0, 0, 1])));
    assert_eq!((hosts[1].host.as_str(), hosts[1].slots), ("h2", 3));
    assert_eq!(hosts[1].switch.as_deref(), Some("sw0/sw1"));
    assert_eq!(hosts[2].slots, 1);
    assert_eq!(hosts[2].switch, None);
}

#[test]
fn bad_hostfiles_name_the_line() {
    let err = |t: &str| parse_hostfile(t, "hf").unwrap_err().to_string();
    assert!(err("h1\nh2 slots=x\n").contains("hf:2: slots=`x`"));
    assert!(err("h1 slots=0").contains("hf:1:"));
    assert!(err("\nh1 colour=red").contains("hf:2: unknown key `colour`"));
    assert!(err("h1 switch=a//b").contains("hf:1: switch=`a//b` is not a path"));
    assert!(err("h1 switch=a\nh1 switch=b")
        .contains("hf:2: host h1 is on switch b here and on switch a above"));
    assert!(err("h1 addr=nowhere").contains("not an IP address"));
    assert!(err("h1 slots").contains("not key=value"));
    assert!(err("# nothing\n").contains("names no host"));
}

#[test]
fn ranks_fill_hosts_in_order() {
    let hosts = parse_hostfile("a slots=2 addr=10.0.0.1\nb addr=10.0.0.2\n", "hf").unwrap();
    let places = place(3, Some(&hosts)).unwrap();
    let names: Vec<&str> = places.iter().map(|p| p.host.as_str()).collect();
    assert_eq!(names, ["a", "a", "b"]);
    assert!(place(4, Some(&hosts))
        .unwrap_err()
        .to_string()
        .contains("3 slots"));
    assert_eq!(
        place(2, None).unwrap()[1].addr,
        IpAddr::from([127, 0, 0, 1])
    );
}

#[test]
fn a_hostfile_gives_the_layout_of_its_slots() {
    let hosts = parse_hostfile("a slots=2 switch=s\nb slots=2\n", "hf").unwrap();
    let layout = layout_of(3, &hosts).unwrap();
    assert_eq!(layout.hosts(), ["a", "a", "b"]);
    assert_eq!(
        layout.switches(),
        [Some("s".into()), Some("s".into()), None]
    );
    assert!(layout_of(5, &hosts)
        .unwrap_err()
        .to_string()
        .contains("4 slots"));
}

#[test]
fn agent_templates_substitute_the_host() {
    assert_eq!(
        agent_words("ip netns exec {host}", "h1").unwrap(),
        ["ip", "netns", "exec", "h1"]
    );
    assert_eq!(
        agent_words("ssh -p 22 {host}", "n").unwrap(),
        ["ssh", "-p", "22", "n"]
    );
    assert_eq!(agent_words("ssh", "n").unwrap(), ["ssh", "n"]);
    assert_eq!(
        agent_words("target/cluster/star8/agent", "h3").unwrap(),
        ["target/cluster/star8/agent", "h3"]
    );
    assert!(agent_words("  ", "n").is_err());
}

#[test]
fn the_port_line_is_recognised() {
    assert_eq!(
        announced_port(b"@autocoll-port 4242\n"),
        Some((vec![], 4242))
    );
    assert_eq!(
        announced_port(b"test x ... @autocoll-port 7\n"),
        Some((b"test x ... ".to_vec(), 7))
    );
    assert_eq!(announced_port(b"hello\n"), None);
}
