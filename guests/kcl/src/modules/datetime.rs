//! `datetime`: the current time, formatted as KCL formats it (chrono's
//! `strftime`), and date validation against a format.
//!
//! The clock is the host's wall clock: the operating system's natively,
//! WASI's wall clock in Wasm (whatever the embedding host provides). KCL
//! prints local time; plait prints UTC in both, so a program's output does
//! not depend on the machine's time zone (KCL in a container on UTC prints
//! the same).

use std::fmt::Write as _;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};

use super::{Args, error};
use crate::builtins::{BuiltinFn, Interp};
use crate::error::Result;
use crate::value::Value;

pub(super) const MEMBERS: &[(&str, BuiltinFn)] = &[
    ("ticks", ticks),
    ("date", date),
    ("now", now),
    ("today", today),
    ("validate", validate),
];

fn current_time() -> DateTime<Utc> {
    let since_epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = i64::try_from(since_epoch.as_secs()).unwrap_or(i64::MAX);
    DateTime::from_timestamp(seconds, since_epoch.subsec_nanos()).unwrap_or_default()
}

/// `time` in a `strftime` format; a bad format fails as KCL's does.
fn format_time(time: &DateTime<Utc>, format: &str) -> Result<String> {
    let mut out = String::new();
    write!(out, "{}", time.format(format))
        .map_err(|_| error("a Display implementation returned an error unexpectedly: Error"))?;
    Ok(out)
}

/// `ticks() -> float`: seconds since the epoch (whole seconds).
fn ticks(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    Ok(Value::Float(current_time().timestamp() as f64))
}

/// `date() -> str`: `%Y-%m-%d %H:%M:%S`.
fn date(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    format_time(&current_time(), "%Y-%m-%d %H:%M:%S").map(Value::str)
}

/// `now(format: str = "%a %b %d %H:%M:%S %Y") -> str`
fn now(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let format = Args::new(args, kwargs)
        .str(0, "format")
        .unwrap_or("%a %b %d %H:%M:%S %Y");
    format_time(&current_time(), format).map(Value::str)
}

/// `today() -> str`: the date and time, a dot, and the seconds since the
/// epoch.
fn today(_: &mut dyn Interp, _: &[Value], _: &[(String, Value)]) -> Result<Value> {
    let time = current_time();
    let text = format_time(&time, "%Y-%m-%d %H:%M:%S")?;
    Ok(Value::str(format!("{text}.{}", time.timestamp())))
}

/// `validate(date: str, format: str) -> bool`: whether the text is a date
/// and time, a date, or a time in the format.
fn validate(_: &mut dyn Interp, args: &[Value], kwargs: &[(String, Value)]) -> Result<Value> {
    let args = Args::new(args, kwargs);
    let Some(date) = args.str(0, "date") else {
        return Err(error("validate() takes 2 positional arguments (0 given)"));
    };
    let Some(format) = args.str(1, "format") else {
        return Err(error("validate() takes 2 positional arguments (1 given)"));
    };
    let valid = NaiveDateTime::parse_from_str(date, format).is_ok()
        || NaiveDate::parse_from_str(date, format).is_ok()
        || NaiveTime::parse_from_str(date, format).is_ok();
    Ok(Value::Bool(valid))
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{call, s};
    use super::*;

    // Expectations from KCL 0.12.3 (the grammar suite's datetime cases).
    #[test]
    fn validate_as_kcl() {
        let cases = [
            ("2024-08-26", "%Y-%m-%d", true),
            ("2024-02-29", "%Y-%m-%d", true),
            ("2023-02-29", "%Y-%m-%d", false),
            ("2024-13-26", "%Y-%m-%d", false),
            ("2024-08-26abc", "%Y-%m-%d", false),
            ("2024-08", "%Y-%m-%d", false),
            ("2024-08-26 10:00", "%Y-%m-%d", false),
            ("10:00:01", "%H:%M:%S", true),
            ("2024-08-26 10:00:01", "%Y-%m-%d %H:%M:%S", true),
        ];
        for (date, format, want) in cases {
            let got = call("datetime", "validate", &[s(date), s(format)], &[]).unwrap();
            assert_eq!(got.is_truthy(), want, "{date} {format}");
        }
        let err = call("datetime", "validate", &[s("x")], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "validate() takes 2 positional arguments (1 given)"
        );
    }

    #[test]
    fn clock_readings_have_kcls_shapes() {
        let now = call("datetime", "now", &[], &[]).unwrap();
        let format = s("%a %b %d %H:%M:%S %Y");
        assert!(
            call("datetime", "validate", &[now, format], &[])
                .unwrap()
                .is_truthy()
        );
        let today = call("datetime", "today", &[], &[]).unwrap();
        let (date, seconds) = today.as_str().unwrap().split_once('.').unwrap();
        assert!(NaiveDateTime::parse_from_str(date, "%Y-%m-%d %H:%M:%S").is_ok());
        assert!(seconds.parse::<i64>().unwrap() > 1_700_000_000);
        assert!(
            matches!(call("datetime", "ticks", &[], &[]).unwrap(), Value::Float(f) if f > 1.7e9)
        );
        let err = call("datetime", "now", &[s("%Q")], &[]).unwrap_err();
        assert_eq!(
            err.message,
            "a Display implementation returned an error unexpectedly: Error"
        );
    }
}
