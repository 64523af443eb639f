//! Cron schedules as the CronJob validation reads them (robfig/cron v3's
//! standard parser: five fields or a descriptor), and time zones as Go's
//! `time.LoadLocation` finds them (the IANA database).

use std::str::FromStr;

/// One field's bounds and the names it takes.
struct Bounds {
    min: i64,
    max: i64,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

const DESCRIPTORS: &[&str] = &[
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
];

/// Parses a schedule; the error is robfig/cron's message.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.starts_with('@') {
        if DESCRIPTORS.contains(&spec) {
            return Ok(());
        }
        if let Some(duration) = spec.strip_prefix("@every ") {
            return if crate::openapi::is_go_duration(duration) {
                Ok(())
            } else {
                Err(format!(
                    "failed to parse duration {spec}: time: invalid duration \"{duration}\""
                ))
            };
        }
        return Err(format!("unrecognized descriptor: {spec}"));
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (text, bounds) in fields
        .iter()
        .zip([MINUTES, HOURS, DAYS_OF_MONTH, MONTHS, DAYS_OF_WEEK])
    {
        for range in text.split(',') {
            parse_range(range, &bounds)?;
        }
    }
    Ok(())
}

fn parse_range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (bounds.min, bounds.max)
    } else {
        let start = int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => int_or_name(low_and_high[1], bounds)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, bounds: &Bounds) -> Result<i64, String> {
    let lower = expr.to_lowercase();
    if let Some(i) = bounds.names.iter().position(|n| *n == lower) {
        let first = if bounds.min == 1 { 1 } else { 0 };
        return Ok(i as i64 + first);
    }
    must_parse_int(expr)
}

fn must_parse_int(expr: &str) -> Result<i64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    let n: i64 = if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        expr.parse()
            .map_err(|_| format!("failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": value out of range"))?
    } else {
        return Err(format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing \"{expr}\": invalid syntax"
        ));
    };
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(n)
}

/// A CronJob's `timeZone`: a name of the IANA database, not `Local`.
pub(crate) fn time_zone(zone: &str) -> Result<(), String> {
    if zone == "Local" {
        return Err(
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
                .to_string(),
        );
    }
    if zone.is_empty() || zone == "UTC" || chrono_tz::Tz::from_str(zone).is_ok() {
        return Ok(());
    }
    Err(format!("unknown time zone {zone}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_as_robfig_cron_parses_them() {
        let cases = [
            ("*/5 * * * *", None),
            ("0 9-17/2 * * MON-FRI", None),
            ("0 0 * JAN,jul sun", None),
            ("0 0 30 2 *", None),
            ("@hourly", None),
            ("@every 5m", None),
            (
                "every minute",
                Some("expected exactly 5 fields, found 2: [every minute]"),
            ),
            (
                "61 * * * *",
                Some("end of range (61) above maximum (59): 61"),
            ),
            (
                "5-1 * * * *",
                Some("beginning of range (5) beyond end of range (1): 5-1"),
            ),
            (
                "*/0 * * * *",
                Some("step of range should be a positive number: */0"),
            ),
            ("@sometimes", Some("unrecognized descriptor: @sometimes")),
            (
                "x * * * *",
                Some("failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ),
            (
                "0 0 0 * *",
                Some("beginning of range (0) below minimum (1): 0"),
            ),
        ];
        for (spec, want) in cases {
            assert_eq!(parse_standard(spec).err().as_deref(), want, "{spec}");
        }
    }

    #[test]
    fn time_zones_are_the_iana_databases() {
        assert!(time_zone("Europe/Berlin").is_ok());
        assert!(time_zone("UTC").is_ok());
        assert!(time_zone("Local").is_err());
        assert_eq!(time_zone(" UTC"), Err("unknown time zone  UTC".to_string()));
        assert_eq!(
            time_zone("Mars/Olympus"),
            Err("unknown time zone Mars/Olympus".to_string())
        );
    }
}
