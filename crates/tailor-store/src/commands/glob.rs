//! Redis's glob patterns (`KEYS`, `SCAN MATCH`): `*` any run, `?` one byte, `[abc]`, `[a-z]`,
//! `[^a]` a class (negated with `^`), `\x` the byte `x` literally. Bytes, not characters, as in
//! Redis. Iterative backtracking over the last `*` only, so any pattern is O(pattern × key).

/// Whether the class at the start of `p` (just after `[`) matches `c`; and the class's length
/// up to and including its `]` (the rest of the pattern when unclosed, as Redis does).
fn class(p: &[u8], c: u8) -> (bool, usize) {
    let negate = p.first() == Some(&b'^');
    let (mut i, mut hit) = (negate as usize, false);
    while i < p.len() && p[i] != b']' {
        if p[i] == b'\\' && i + 1 < p.len() {
            hit |= p[i + 1] == c;
            i += 2;
        } else if i + 2 < p.len() && p[i + 1] == b'-' && p[i + 2] != b']' {
            let (lo, hi) = (p[i].min(p[i + 2]), p[i].max(p[i + 2]));
            hit |= (lo..=hi).contains(&c);
            i += 3;
        } else {
            hit |= p[i] == c;
            i += 1;
        }
    }
    (hit != negate, (i + 1).min(p.len()))
}

/// Whether one pattern element at `p[pi..]` matches byte `c`: Some(length of the element).
fn one(p: &[u8], pi: usize, c: u8) -> Option<usize> {
    match p[pi] {
        b'?' => Some(1),
        b'[' => match class(&p[pi + 1..], c) {
            (true, len) => Some(1 + len),
            (false, _) => None,
        },
        b'\\' if pi + 1 < p.len() => (p[pi + 1] == c).then_some(2),
        b => (b == c).then_some(1),
    }
}

/// Whether `key` matches `pattern`.
pub fn matches(pattern: &[u8], key: &[u8]) -> bool {
    let (mut pi, mut ki) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ki < key.len() {
        if pi < pattern.len() && pattern[pi] == b'*' {
            pi += 1;
            star = Some((pi, ki));
            continue;
        }
        if pi < pattern.len() {
            if let Some(len) = one(pattern, pi, key[ki]) {
                pi += len;
                ki += 1;
                continue;
            }
        }
        match star {
            Some((sp, sk)) => {
                pi = sp;
                ki = sk + 1;
                star = Some((sp, sk + 1));
            }
            None => return false,
        }
    }
    pattern[pi.min(pattern.len())..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_like_redis() {
        let m = |p: &str, k: &str| matches(p.as_bytes(), k.as_bytes());
        assert!(m("*", "") && m("*", "anything") && m("", "") && !m("", "a"));
        assert!(m("h?llo", "hello") && m("h?llo", "hallo") && !m("h?llo", "hllo"));
        assert!(m("h*llo", "hllo") && m("h*llo", "heeeello") && !m("h*llo", "hellx"));
        assert!(m("h[ae]llo", "hello") && m("h[ae]llo", "hallo") && !m("h[ae]llo", "hillo"));
        assert!(m("h[^e]llo", "hallo") && !m("h[^e]llo", "hello"));
        assert!(m("h[a-b]llo", "hbllo") && !m("h[a-b]llo", "hcllo") && m("h[b-a]llo", "hallo"));
        assert!(m("a\\*b", "a*b") && !m("a\\*b", "axb") && m("[\\]]", "]"));
        assert!(m("user:*:name", "user:42:name") && !m("user:*:name", "user:42:age"));
        assert!(m("*a*b*c*", "xxaxxbxxcxx") && !m("*a*b*c*", "xxaxxcxxbxx"));
        assert!(m("a[", "a[") || !m("a[", "ab"), "an unclosed class never panics");
        assert!(!m("[", "") && !m("\\", "x") && m("\\", "\\"));
        let long = "a*".repeat(200) + "b";
        assert!(!m(&long, &"a".repeat(300)), "no exponential backtracking");
    }
}
