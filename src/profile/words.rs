//! What a column's name says: split into words, and the words that mark an
//! identifier, a key, a sensitive attribute or a code.

/// Name words of direct identifiers: dropped, not pseudonymized.
const DIRECT_WORDS: &[&str] = &[
    "name",
    "names",
    "firstname",
    "lastname",
    "surname",
    "fullname",
    "forename",
    "givenname",
    "familyname",
    "email",
    "mail",
    "phone",
    "telephone",
    "mobile",
    "fax",
    "address",
    "street",
    "ip",
    "username",
    "login",
    "url",
    "ssn",
    "passport",
    "iban",
    "license",
    "licence",
];
/// Name words of keys: dropped, with pseudonymization suggested.
const KEY_WORDS: &[&str] = &["id", "ids", "uuid", "guid", "key", "mrn", "account", "acct"];
/// Words ending in "id" that are not keys (a word such as "patientid" is).
const NOT_KEYS: &[&str] = &[
    "paid", "unpaid", "prepaid", "valid", "invalid", "void", "avoid", "acid", "fluid", "lipid", "rapid", "humid",
    "solid", "hybrid", "liquid", "android", "thyroid", "steroid", "opioid", "covid", "david", "druid", "squid",
    "amyloid", "typhoid", "mermaid", "orchid",
];
/// Name words of sensitive attributes: released as they are, suggested for ℓ-diversity.
pub(super) const SENSITIVE_WORDS: &[&str] = &[
    "diagnosis",
    "diagnoses",
    "diagnostic",
    "disease",
    "diseases",
    "condition",
    "illness",
    "icd",
    "salary",
    "income",
    "wage",
    "wages",
    "earnings",
    "religion",
    "treatment",
    "medication",
    "drug",
    "drugs",
];
/// Name words of codes read left to right (an integer zip code is masked, not banded).
pub(super) const CODE_WORDS: &[&str] = &["zip", "zipcode", "postal", "postcode", "postalcode", "plz", "fips", "code"];

/// The column name's words: split at non-alphanumerics and lower-to-upper
/// case changes, lowercased.
pub(super) fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if !ch.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_numeric();
        cur.extend(ch.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

pub(super) fn has_word(name: &str, set: &[&str]) -> bool {
    words(name).iter().any(|w| set.contains(&w.as_str()))
}

/// The identifier word of a name: (word, is it a key).
pub(super) fn identifier_word(name: &str) -> Option<(String, bool)> {
    let ws = words(name);
    if let Some(w) = ws.iter().find(|w| DIRECT_WORDS.contains(&w.as_str())) {
        return Some((w.clone(), false));
    }
    ws.iter()
        .find(|w| {
            KEY_WORDS.contains(&w.as_str()) || (w.len() > 4 && w.ends_with("id") && !NOT_KEYS.contains(&w.as_str()))
        })
        .map(|w| (w.clone(), true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_split_at_case_and_punctuation() {
        assert_eq!(words("patientID"), ["patient", "id"]);
        assert_eq!(words("first_name"), ["first", "name"]);
        assert_eq!(words("salary-class"), ["salary", "class"]);
        assert_eq!(identifier_word("patientid"), Some(("patientid".into(), true)));
        assert_eq!(identifier_word("paid"), None);
        assert_eq!(identifier_word("Email Address"), Some(("email".into(), false)));
    }
}
