//! Selection on a communicator from the environment: `AUTOCOLL_SELECT`
//! names the selector and `AUTOCOLL_STATE` the lottery's memory across
//! runs, as the MPI interposition library reads them, less `native`,
//! which needs an MPI library to hand the calls to.

use std::path::{Path, PathBuf};

use crate::clock::now_ns;
use crate::comm::communicator::Communicator;
use crate::error::{Error, Result};
use crate::select::lottery::{Budget, Params};
use crate::select::{default_for, Algorithm, Fixed, Implementation, Lottery, Table};

/// The variable naming the selector.
pub const ENV_SELECT: &str = "AUTOCOLL_SELECT";
/// The variable naming the lottery's state file.
pub const ENV_STATE: &str = "AUTOCOLL_STATE";

const VALUES: &str = "lottery, lottery:FILE, table:FILE or fixed:IMPL[,IMPL...]";

/// What `AUTOCOLL_SELECT` (or `AUTOCOLL_STATE` alone) asks for; its files
/// are read when it is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Choice {
    /// The lottery; with a tuning file, each pool holds the file's pick
    /// from its first call and tries the others under a budget.
    Lottery(Option<PathBuf>),
    /// A tuning file from `autocoll tune`, the defaults where it has no rule.
    Table(PathBuf),
    /// One implementation per collective named, the defaults for the others.
    Fixed(Vec<Implementation>),
}

/// Sets the selector `AUTOCOLL_SELECT` and `AUTOCOLL_STATE` ask for, if
/// either is set (collective: every rank's environment must agree). A
/// value it cannot use is an error naming the variable.
pub fn from_env(comm: &mut Communicator) -> Result<()> {
    let select = match std::env::var_os(ENV_SELECT) {
        Some(value) => Some(
            value
                .into_string()
                .map_err(|_| Error::Config(format!("{ENV_SELECT} is not valid UTF-8")))?,
        ),
        None => None,
    };
    let state = std::env::var_os(ENV_STATE).map(PathBuf::from);
    apply(comm, select.as_deref(), state.as_deref())
}

/// Sets the selector that `select` (a value of `AUTOCOLL_SELECT`) and
/// `state` (of `AUTOCOLL_STATE`) ask for; both `None`: the communicator's
/// own stays.
pub(crate) fn apply(
    comm: &mut Communicator,
    select: Option<&str>,
    state: Option<&Path>,
) -> Result<()> {
    let Some(choice) = parse(select, state)? else {
        return Ok(());
    };
    let at = |e: Error| {
        let why = match e {
            Error::Config(why) => why,
            other => other.to_string(),
        };
        Error::Config(format!(
            "{ENV_SELECT}={}: {why}",
            select.unwrap_or_default()
        ))
    };
    match choice {
        Choice::Lottery(prior) => {
            let lottery = lottery(prior.as_deref()).map_err(at)?;
            comm.use_lottery_with(lottery, state.map(Path::to_path_buf));
        }
        Choice::Table(file) => comm.set_selector(Box::new(table(&file).map_err(at)?)),
        Choice::Fixed(imps) => {
            let fixed = imps.into_iter().fold(Fixed::default(), Fixed::with);
            comm.set_selector(Box::new(fixed));
        }
    }
    Ok(())
}

/// What the two values ask for: `None` when neither is set; the lottery
/// when only `state` is. A state file goes with the lottery only: the
/// other selectors learn nothing to keep.
pub(crate) fn parse(select: Option<&str>, state: Option<&Path>) -> Result<Option<Choice>> {
    if state.is_some_and(|s| s.as_os_str().is_empty()) {
        return Err(Error::Config(format!(
            "{ENV_STATE} is set but empty: give the file the lottery remembers in, or unset it"
        )));
    }
    let Some(text) = select else {
        return Ok(state.map(|_| Choice::Lottery(None)));
    };
    let choice = parse_select(text)?;
    match (&choice, state) {
        (Choice::Lottery(_), _) | (_, None) => Ok(Some(choice)),
        (_, Some(file)) => Err(Error::Config(format!(
            "{ENV_STATE}={}: the lottery's memory, and {ENV_SELECT}={text} runs no lottery: unset one of them",
            file.display()
        ))),
    }
}

/// A value of `AUTOCOLL_SELECT`.
fn parse_select(text: &str) -> Result<Choice> {
    let value = text.trim();
    let refuse = |why: String| Error::Config(format!("{ENV_SELECT}={text}: {why}"));
    if value.is_empty() {
        return Err(Error::Config(format!(
            "{ENV_SELECT} is set but empty: give {VALUES}, or unset it"
        )));
    }
    let file = |rest: &str| match rest.trim() {
        "" => Err(refuse("names no file".into())),
        name => Ok(PathBuf::from(name)),
    };
    if let Some(rest) = value.strip_prefix("table:") {
        return file(rest).map(Choice::Table);
    }
    if let Some(rest) = value.strip_prefix("lottery:") {
        return file(rest).map(|f| Choice::Lottery(Some(f)));
    }
    if let Some(list) = value.strip_prefix("fixed:") {
        return parse_fixed(list).map(Choice::Fixed).map_err(refuse);
    }
    match value {
        "lottery" => Ok(Choice::Lottery(None)),
        "native" => Err(refuse(
            "native hands every call to the MPI library, and a program on autocoll::init() has none (it works under the MPI interposition library)".into(),
        )),
        _ => Err(refuse(format!("expected {VALUES}"))),
    }
}

/// `IMPL[,IMPL...]`: at most one per collective, none the MPI library's.
fn parse_fixed(list: &str) -> std::result::Result<Vec<Implementation>, String> {
    let mut imps: Vec<Implementation> = Vec::new();
    for id in list.split(',').map(str::trim) {
        let imp: Implementation = id.parse().map_err(|e: Error| e.to_string())?;
        if imp.algorithm == Algorithm::Native {
            return Err(not_native(&imp));
        }
        if imps.iter().any(|other| other.op == imp.op) {
            return Err(format!("two implementations for {}", imp.op));
        }
        imps.push(imp);
    }
    Ok(imps)
}

fn not_native(imp: &Implementation) -> String {
    format!(
        "`{imp}` is the MPI library's own algorithm, which only the MPI interposition library runs"
    )
}

/// A tuning file, refused if a rule names the MPI library's own algorithm:
/// the first call of its size would fail.
fn table(file: &Path) -> Result<Table> {
    let table = Table::load(file)?;
    match table
        .rules
        .iter()
        .find(|r| r.imp.algorithm == Algorithm::Native)
    {
        Some(rule) => Err(Error::Config(format!(
            "{}: {}",
            file.display(),
            not_native(&rule.imp)
        ))),
        None => Ok(table),
    }
}

/// The lottery as [`Communicator::use_lottery`] makes it; with `prior`, a
/// tuning file, each pool's incumbent is the file's pick (the built-in
/// default where it has no rule), and the others are tried only as a
/// budget allows, as under the MPI interposition library.
fn lottery(prior: Option<&Path>) -> Result<Lottery> {
    let Some(file) = prior else {
        return Ok(Lottery::new(Params::default(), now_ns()));
    };
    let table = table(file)?;
    let params = Params {
        budget: Some(Budget::default()),
        ..Params::default()
    };
    Ok(
        Lottery::new(params, now_ns()).with_incumbent(move |op, ranks, bytes| {
            let rule = table.lookup(op, ranks, bytes).cloned();
            Some(rule.unwrap_or_else(|| default_for(op, ranks, bytes)))
        }),
    )
}

#[cfg(test)]
mod tests;
