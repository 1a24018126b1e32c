//! The library's settings, read once from the environment.
//!
//! Every value that does not parse is reported as an error naming the
//! variable, and that setting keeps its default: a program preloaded in
//! production must run on whatever it was given.

use std::path::PathBuf;

use autocoll::balance::Params;
use autocoll::comm::sim::Model;
use autocoll::select::estimate::Link;
use autocoll::select::lottery::Objective;
use autocoll::select::Table;
use autocoll::{Collective, Implementation};

/// How each call's implementation is chosen (`AUTOCOLL_SELECT`).
#[derive(Debug)]
pub enum Select {
    /// The lottery, with the MPI library's own algorithm among its
    /// candidates; the incumbent of each pool is a tuning file's pick
    /// where one is given (`lottery:FILE`), else the MPI library's own.
    Lottery(Option<Box<Table>>),
    /// Every call goes to the MPI library, untouched (the interposition's
    /// own cost, and a switch to turn autocoll off without unloading it).
    Native,
    /// A tuning file from `autocoll tune`; sizes it has no rule for run natively.
    Table(Box<Table>),
    /// One implementation per collective named; the others run natively.
    Fixed(Vec<Implementation>),
}

/// Everything the library reads from the environment.
#[derive(Debug)]
pub struct Config {
    /// `AUTOCOLL_SELECT`.
    pub select: Select,
    /// `AUTOCOLL_OBJECTIVE`: what the lottery minimises.
    pub objective: Objective,
    /// `AUTOCOLL_STATE`: the lottery's memory across runs.
    pub state: Option<PathBuf>,
    /// `AUTOCOLL_MODEL`: the machine's model (`autocoll sim fit`), for the
    /// lottery's predictions; without it the lottery fits one to what it
    /// measures.
    pub model: Option<Link>,
    /// `AUTOCOLL_TRACE`: the directory of stage traces.
    pub trace: Option<PathBuf>,
    /// `AUTOCOLL_BALANCE`: the broadcast balancer's parameters.
    pub balance: Option<Params>,
    /// `AUTOCOLL_PATTERN`: the file of the program's communication pattern.
    pub pattern: Option<PathBuf>,
    /// `AUTOCOLL_VERBOSE`: a summary at `MPI_Finalize`.
    pub verbose: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            select: Select::Lottery(None),
            objective: Objective::Mean,
            state: None,
            model: None,
            trace: None,
            balance: None,
            pattern: None,
            verbose: false,
        }
    }
}

impl Config {
    /// The settings `var` gives (the environment, in the library), and one
    /// message per variable whose value was refused.
    pub fn read(var: impl Fn(&str) -> Option<String>) -> (Config, Vec<String>) {
        let mut config = Config::default();
        let mut errors = Vec::new();
        let mut refuse = |name: &str, value: &str, why: String| {
            errors.push(format!(
                "{name}={value:?}: {why}; using the default instead"
            ))
        };
        if let Some(v) = var("AUTOCOLL_SELECT") {
            match parse_select(&v) {
                Ok(select) => config.select = select,
                Err(why) => refuse("AUTOCOLL_SELECT", &v, why),
            }
        }
        if let Some(v) = var("AUTOCOLL_OBJECTIVE") {
            match v.parse() {
                Ok(objective) => config.objective = objective,
                Err(why) => refuse("AUTOCOLL_OBJECTIVE", &v, why),
            }
        }
        config.state = path(&var, "AUTOCOLL_STATE", &mut refuse);
        if let Some(file) = path(&var, "AUTOCOLL_MODEL", &mut refuse) {
            match Model::load(&file) {
                Ok(m) => config.model = Some(link_of(&m)),
                Err(why) => refuse(
                    "AUTOCOLL_MODEL",
                    &file.display().to_string(),
                    why.to_string(),
                ),
            }
        }
        config.trace = path(&var, "AUTOCOLL_TRACE", &mut refuse);
        config.pattern = path(&var, "AUTOCOLL_PATTERN", &mut refuse);
        if let Some(v) = var("AUTOCOLL_BALANCE") {
            match Params::parse(&v) {
                Ok(params) => config.balance = params,
                Err(why) => refuse("AUTOCOLL_BALANCE", &v, why),
            }
        }
        if let Some(v) = var("AUTOCOLL_VERBOSE") {
            match v.trim() {
                "" | "0" | "no" | "off" => {}
                "1" | "yes" | "on" => config.verbose = true,
                _ => refuse("AUTOCOLL_VERBOSE", &v, "expected 1 or 0".into()),
            }
        }
        (config, errors)
    }
}

fn path(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
    refuse: &mut impl FnMut(&str, &str, String),
) -> Option<PathBuf> {
    let value = var(name)?;
    if value.trim().is_empty() {
        refuse(name, &value, "expected a path".into());
        return None;
    }
    Some(PathBuf::from(value))
}

/// The lottery's view of a `sim` model: a message's latency is the
/// wire's and both ends' overheads.
fn link_of(m: &Model) -> Link {
    Link::from_ns(
        m.latency_ns + 2.0 * m.overhead_ns,
        m.host_ns_per_byte,
        m.local_ns_per_byte,
    )
}

/// `lottery`, `lottery:FILE`, `native`, `table:FILE` or
/// `fixed:IMPL[,IMPL…]`.
fn parse_select(text: &str) -> Result<Select, String> {
    let text = text.trim();
    let table = |file: &str| Table::load(file.as_ref()).map_err(|e| e.to_string());
    if let Some(file) = text.strip_prefix("table:") {
        return Ok(Select::Table(Box::new(table(file)?)));
    }
    if let Some(file) = text.strip_prefix("lottery:") {
        return Ok(Select::Lottery(Some(Box::new(table(file)?))));
    }
    if let Some(list) = text.strip_prefix("fixed:") {
        return parse_fixed(list).map(Select::Fixed);
    }
    match text {
        "lottery" => Ok(Select::Lottery(None)),
        "native" => Ok(Select::Native),
        _ => {
            Err("expected lottery, lottery:FILE, native, table:FILE or fixed:IMPL[,IMPL...]".into())
        }
    }
}

fn parse_fixed(list: &str) -> Result<Vec<Implementation>, String> {
    let mut imps: Vec<Implementation> = Vec::new();
    for id in list.split(',').map(str::trim) {
        let imp: Implementation = id.parse().map_err(|e| format!("{e}"))?;
        if imps.iter().any(|other| other.op == imp.op) {
            return Err(format!("two implementations for {}", imp.op));
        }
        imps.push(imp);
    }
    Ok(imps)
}

impl Select {
    /// The rule for `op` under `fixed:`, if one was named.
    pub fn fixed_for(&self, op: Collective) -> Option<&Implementation> {
        match self {
            Select::Fixed(imps) => imps.iter().find(|imp| imp.op == op),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(pairs: &[(&str, &str)]) -> (Config, Vec<String>) {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::read(|name| env.get(name).cloned())
    }

    #[test]
    fn nothing_set_is_the_lottery_and_nothing_else() {
        let (config, errors) = read(&[]);
        assert!(errors.is_empty());
        assert!(matches!(config.select, Select::Lottery(None)));
        assert_eq!(config.objective, Objective::Mean);
        assert!(config.state.is_none() && config.trace.is_none() && config.pattern.is_none());
        assert!(config.model.is_none());
        assert!(config.balance.is_none() && !config.verbose);
    }

    #[test]
    fn fixed_names_one_implementation_per_collective() {
        let (config, errors) = read(&[(
            "AUTOCOLL_SELECT",
            "fixed:bcast:binary:seg=8K, allreduce:mpi",
        )]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            config
                .select
                .fixed_for(Collective::Bcast)
                .unwrap()
                .to_string(),
            "bcast:binary:seg=8K"
        );
        assert_eq!(
            config.select.fixed_for(Collective::Allreduce),
            Some(&Implementation::native(Collective::Allreduce))
        );
        assert_eq!(config.select.fixed_for(Collective::Reduce), None);
    }

    #[test]
    fn a_bad_value_names_its_variable_and_keeps_the_default() {
        let (config, errors) = read(&[
            ("AUTOCOLL_SELECT", "fixed:bcast:binary,bcast:flat"),
            ("AUTOCOLL_BALANCE", "mode=sideways"),
            ("AUTOCOLL_VERBOSE", "loud"),
            ("AUTOCOLL_TRACE", " "),
            ("AUTOCOLL_OBJECTIVE", "fastest"),
        ]);
        assert!(matches!(config.select, Select::Lottery(None)));
        assert!(config.balance.is_none() && !config.verbose && config.trace.is_none());
        assert_eq!(config.objective, Objective::Mean);
        assert_eq!(errors.len(), 5, "{errors:?}");
        for (error, name) in errors.iter().zip([
            "AUTOCOLL_SELECT",
            "AUTOCOLL_OBJECTIVE",
            "AUTOCOLL_TRACE",
            "AUTOCOLL_BALANCE",
            "AUTOCOLL_VERBOSE",
        ]) {
            assert!(error.starts_with(name), "{error}");
            assert!(error.ends_with("using the default instead"), "{error}");
        }
        assert!(errors[0].contains("two implementations for bcast"));
    }

    #[test]
    fn a_missing_table_file_is_refused_with_its_reason() {
        for select in ["table:/nonexistent/t.toml", "lottery:/nonexistent/t.toml"] {
            let (config, errors) = read(&[("AUTOCOLL_SELECT", select)]);
            assert!(matches!(config.select, Select::Lottery(None)));
            assert!(errors[0].contains("/nonexistent/t.toml"), "{errors:?}");
        }
    }

    #[test]
    fn a_tuning_file_can_seed_the_lottery_instead_of_fixing_the_choice() {
        let dir = std::env::temp_dir().join(format!("autocoll-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.toml");
        std::fs::write(
            &file,
            "schema = \"autocoll.tuning/1\"\n[[rule]]\nop = \"bcast\"\nranks = \"2..8\"\nbytes = \"0..1M\"\nimpl = \"bcast:chain\"\n",
        )
        .unwrap();
        let select = format!("lottery:{}", file.display());
        let (config, errors) = read(&[("AUTOCOLL_SELECT", &select)]);
        assert!(errors.is_empty(), "{errors:?}");
        let Select::Lottery(Some(table)) = &config.select else {
            panic!("{:?}", config.select);
        };
        let rule = table.lookup(Collective::Bcast, 4, 1000).unwrap();
        assert_eq!(rule.to_string(), "bcast:chain");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_model_file_is_read_and_a_bad_one_refused_with_its_reason() {
        let dir = std::env::temp_dir().join(format!("autocoll-model-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("m.toml");
        std::fs::write(
            &good,
            "latency_ns = 20000.0\noverhead_ns = 5000.0\nhost_ns_per_byte = 80.0\n",
        )
        .unwrap();
        let (config, errors) = read(&[("AUTOCOLL_MODEL", good.to_str().unwrap())]);
        assert!(errors.is_empty(), "{errors:?}");
        let link = config.model.expect("read");
        assert!((link.latency_s - 30e-6).abs() < 1e-12, "{link:?}");
        assert!((link.s_per_byte - 80e-9).abs() < 1e-15, "{link:?}");
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "latency_ns = \"soon\"\n").unwrap();
        let (config, errors) = read(&[("AUTOCOLL_MODEL", bad.to_str().unwrap())]);
        assert!(config.model.is_none());
        assert!(
            errors[0].starts_with("AUTOCOLL_MODEL") && errors[0].contains("bad.toml"),
            "{errors:?}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn every_setting_is_read() {
        let (config, errors) = read(&[
            ("AUTOCOLL_SELECT", "native"),
            ("AUTOCOLL_STATE", "s.json"),
            ("AUTOCOLL_TRACE", "tr"),
            ("AUTOCOLL_PATTERN", "p.json"),
            ("AUTOCOLL_BALANCE", "sort"),
            ("AUTOCOLL_VERBOSE", "1"),
            ("AUTOCOLL_OBJECTIVE", "mean"),
        ]);
        assert!(errors.is_empty());
        assert_eq!(config.objective, Objective::Mean);
        assert!(matches!(config.select, Select::Native));
        assert_eq!(config.state, Some("s.json".into()));
        assert_eq!(config.trace, Some("tr".into()));
        assert_eq!(config.pattern, Some("p.json".into()));
        assert!(config.balance.is_some() && config.verbose);
    }
}
