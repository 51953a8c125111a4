//! Many short lists (literals, the patterns anchored on each literal) packed into one
//! allocation: the prefilter holds thousands of them for the life of the process, and a
//! vector each cost more in allocation overhead than in contents.

/// Lists of `T`, one after the other, told apart by where each ends.
#[derive(Debug, Clone)]
pub(crate) struct Packed<T> {
    items: Vec<T>,
    ends: Vec<u32>,
}

impl<T: Clone> Packed<T> {
    /// From `lists`, in order.
    pub fn new<L: AsRef<[T]>>(lists: &[L]) -> Packed<T> {
        let mut items = Vec::with_capacity(lists.iter().map(|l| l.as_ref().len()).sum());
        let mut ends = Vec::with_capacity(lists.len());
        for l in lists {
            items.extend_from_slice(l.as_ref());
            ends.push(u32::try_from(items.len()).unwrap_or(u32::MAX));
        }
        Packed { items, ends }
    }

    /// List `i`.
    pub fn get(&self, i: usize) -> Option<&[T]> {
        let end = *self.ends.get(i)? as usize;
        let start = i.checked_sub(1).and_then(|p| self.ends.get(p)).map_or(0, |&s| s as usize);
        self.items.get(start..end)
    }

    /// How many lists.
    pub fn len(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_come_back_as_given() {
        let lists: Vec<Vec<u8>> = vec![b"abc".to_vec(), Vec::new(), b"de".to_vec()];
        let p = Packed::new(&lists);
        assert_eq!(p.len(), 3);
        assert_eq!(p.get(0), Some(&b"abc"[..]));
        assert_eq!(p.get(1), Some(&b""[..]));
        assert_eq!(p.get(2), Some(&b"de"[..]));
        assert_eq!(p.get(3), None);
    }
}
