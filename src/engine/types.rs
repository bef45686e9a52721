//! The one reading of a column's type: kanon's columns carry DuckDB type
//! names (Spark's and PostgreSQL's columns arrive as DuckDB types), and
//! every rule that depends on what a type holds asks [`ColumnType`].

/// What a column's values are, by its DuckDB type name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    /// TINYINT … HUGEINT and UTINYINT … UHUGEINT: `bits` wide.
    Integer {
        unsigned: bool,
        bits: u16,
    },
    /// FLOAT (REAL), DOUBLE, DECIMAL(p,s).
    Fractional,
    Date,
    /// TIME, TIMETZ.
    Time,
    /// TIMESTAMP in any precision or zone.
    Timestamp,
    Interval,
    Varchar,
    Uuid,
    Boolean,
    Other,
}

impl ColumnType {
    pub fn of(type_name: &str) -> ColumnType {
        let t = type_name.to_ascii_uppercase();
        let int = |unsigned, bits| ColumnType::Integer { unsigned, bits };
        match t.as_str() {
            "TINYINT" => int(false, 8),
            "SMALLINT" => int(false, 16),
            "INTEGER" => int(false, 32),
            "BIGINT" => int(false, 64),
            "HUGEINT" => int(false, 128),
            "UTINYINT" => int(true, 8),
            "USMALLINT" => int(true, 16),
            "UINTEGER" => int(true, 32),
            "UBIGINT" => int(true, 64),
            "UHUGEINT" => int(true, 128),
            "FLOAT" | "REAL" | "DOUBLE" => ColumnType::Fractional,
            "DATE" => ColumnType::Date,
            "INTERVAL" => ColumnType::Interval,
            "VARCHAR" => ColumnType::Varchar,
            "UUID" => ColumnType::Uuid,
            "BOOLEAN" => ColumnType::Boolean,
            _ if t.starts_with("DECIMAL") => ColumnType::Fractional,
            _ if t.starts_with("TIMESTAMP") => ColumnType::Timestamp,
            _ if t.starts_with("TIME") => ColumnType::Time,
            _ => ColumnType::Other,
        }
    }

    /// Numbers: its values order as numbers.
    pub fn is_number(self) -> bool {
        matches!(self, ColumnType::Integer { .. } | ColumnType::Fractional)
    }

    /// An order the ordered distance reads: numbers, dates, times and intervals.
    pub(crate) fn is_ordered(self) -> bool {
        self.is_number()
            || matches!(self, ColumnType::Date | ColumnType::Time | ColumnType::Timestamp | ColumnType::Interval)
    }

    /// An integer every value of which a BIGINT holds.
    pub(crate) fn fits_bigint(self) -> bool {
        matches!(self, ColumnType::Integer { unsigned, bits } if bits < 64 || (bits == 64 && !unsigned))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_read_once() {
        assert!(ColumnType::of("DECIMAL(8,2)").is_number());
        assert!(ColumnType::of("bigint").fits_bigint() && !ColumnType::of("UBIGINT").fits_bigint());
        assert!(ColumnType::of("TIMESTAMP WITH TIME ZONE").is_ordered() && !ColumnType::of("VARCHAR").is_ordered());
        assert_eq!(ColumnType::of("TIME"), ColumnType::Time);
        assert_eq!(ColumnType::of("unread Spark type map<string,int>"), ColumnType::Other);
    }
}
