//! Element types and reduction operations.
//!
//! The typed API takes slices of any [`Element`] (the integer and float
//! primitives) and an [`Op`]: a [`Builtin`] (sum, prod, min, max, and the
//! bitwise three for integers) or a user's commutative closure. Below the
//! API the collectives move bytes, so an op is applied to byte runs that
//! hold whole elements, read as `T` in place (or copied out when a payload
//! from the wire is not aligned): one reduce pipeline serves every type.

use std::fmt;
use std::sync::Arc;

use bytemuck::Pod;

use crate::error::{Error, Result};

/// A built-in reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Builtin {
    /// Sum (integers wrap around, as two's complement hardware does).
    Sum,
    /// Product (integers wrap around).
    Prod,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Bitwise and (integers only).
    Band,
    /// Bitwise or (integers only).
    Bor,
    /// Bitwise exclusive or (integers only).
    Bxor,
}

impl Builtin {
    /// All seven, for listings and tests.
    pub const ALL: [Builtin; 7] = [
        Builtin::Sum,
        Builtin::Prod,
        Builtin::Min,
        Builtin::Max,
        Builtin::Band,
        Builtin::Bor,
        Builtin::Bxor,
    ];

    /// The name the CLI uses.
    pub fn name(self) -> &'static str {
        match self {
            Builtin::Sum => "sum",
            Builtin::Prod => "prod",
            Builtin::Min => "min",
            Builtin::Max => "max",
            Builtin::Band => "band",
            Builtin::Bor => "bor",
            Builtin::Bxor => "bxor",
        }
    }
}

impl std::str::FromStr for Builtin {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Builtin::ALL
            .into_iter()
            .find(|b| b.name() == s)
            .ok_or_else(|| {
                format!("unknown reduction `{s}` (sum, prod, min, max, band, bor, bxor)")
            })
    }
}

/// A plain-old-data element type the collectives can carry and reduce.
pub trait Element: Pod + Send + Sync + PartialEq + fmt::Debug {
    /// The type's name (`i32`, `f64`, ...).
    const NAME: &'static str;
    /// Applies `op` element-wise: `acc[i] = op(acc[i], inc[i])`. Returns
    /// false when `op` is not defined for the type.
    fn apply(op: Builtin, acc: &mut [Self], inc: &[Self]) -> bool;
}

fn zip_apply<T: Copy>(acc: &mut [T], inc: &[T], f: impl Fn(T, T) -> T) {
    for (a, &b) in acc.iter_mut().zip(inc) {
        *a = f(*a, b);
    }
}

macro_rules! integer_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const NAME: &'static str = stringify!($t);
            fn apply(op: Builtin, acc: &mut [Self], inc: &[Self]) -> bool {
                match op {
                    Builtin::Sum => zip_apply(acc, inc, <$t>::wrapping_add),
                    Builtin::Prod => zip_apply(acc, inc, <$t>::wrapping_mul),
                    Builtin::Min => zip_apply(acc, inc, Ord::min),
                    Builtin::Max => zip_apply(acc, inc, Ord::max),
                    Builtin::Band => zip_apply(acc, inc, |a, b| a & b),
                    Builtin::Bor => zip_apply(acc, inc, |a, b| a | b),
                    Builtin::Bxor => zip_apply(acc, inc, |a, b| a ^ b),
                }
                true
            }
        }
    )*};
}

macro_rules! float_element {
    ($($t:ty),*) => {$(
        impl Element for $t {
            const NAME: &'static str = stringify!($t);
            fn apply(op: Builtin, acc: &mut [Self], inc: &[Self]) -> bool {
                match op {
                    Builtin::Sum => zip_apply(acc, inc, |a, b| a + b),
                    Builtin::Prod => zip_apply(acc, inc, |a, b| a * b),
                    Builtin::Min => zip_apply(acc, inc, <$t>::min),
                    Builtin::Max => zip_apply(acc, inc, <$t>::max),
                    Builtin::Band | Builtin::Bor | Builtin::Bxor => return false,
                }
                true
            }
        }
    )*};
}

integer_element!(i8, i16, i32, i64, u8, u16, u32, u64);
float_element!(f32, f64);

type UserFn<T> = Arc<dyn Fn(&mut [T], &[T]) + Send + Sync>;

/// A reduction over elements of type `T`: a built-in or a user closure.
pub enum Op<T> {
    /// One of the built-in reductions.
    Builtin(Builtin),
    /// A user's element-wise combination `acc[i] = f(acc[i], inc[i])`,
    /// which must be commutative and associative: the trees combine in
    /// whatever order their shape gives.
    User(UserFn<T>),
}

impl<T> Clone for Op<T> {
    fn clone(&self) -> Self {
        match self {
            Op::Builtin(b) => Op::Builtin(*b),
            Op::User(f) => Op::User(f.clone()),
        }
    }
}

impl<T: Element> Op<T> {
    /// Sum.
    pub const SUM: Op<T> = Op::Builtin(Builtin::Sum);
    /// Product.
    pub const PROD: Op<T> = Op::Builtin(Builtin::Prod);
    /// Minimum.
    pub const MIN: Op<T> = Op::Builtin(Builtin::Min);
    /// Maximum.
    pub const MAX: Op<T> = Op::Builtin(Builtin::Max);

    /// A user reduction; declare it only for commutative, associative `f`.
    pub fn commutative(f: impl Fn(&mut [T], &[T]) + Send + Sync + 'static) -> Self {
        Op::User(Arc::new(f))
    }

    /// The op's name.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Builtin(b) => b.name(),
            Op::User(_) => "user",
        }
    }

    /// Fails when the op is not defined for `T` (bitwise ops on floats).
    pub fn check(&self) -> Result<()> {
        if let Op::Builtin(b) = self {
            if !T::apply(*b, &mut [], &[]) {
                return Err(Error::OpType {
                    op: b.name(),
                    ty: T::NAME,
                });
            }
        }
        Ok(())
    }

    /// `acc[i] = op(acc[i], inc[i])`. An op that `check` rejects leaves
    /// `acc` as it is.
    pub fn apply(&self, acc: &mut [T], inc: &[T]) {
        match self {
            Op::Builtin(b) => {
                T::apply(*b, acc, inc);
            }
            Op::User(f) => f(acc, inc),
        }
    }

    /// The op as a combination of byte runs holding whole elements.
    pub(crate) fn on_bytes(&self, acc: &mut [u8], inc: &[u8]) {
        match (
            bytemuck::try_cast_slice_mut::<u8, T>(acc),
            bytemuck::try_cast_slice::<u8, T>(inc),
        ) {
            (Ok(a), Ok(b)) => self.apply(a, b),
            // Payloads from the wire need not be aligned for T.
            _ => {
                let mut a: Vec<T> = bytemuck::pod_collect_to_vec(acc);
                let b: Vec<T> = bytemuck::pod_collect_to_vec(inc);
                self.apply(&mut a, &b);
                acc.copy_from_slice(bytemuck::cast_slice(&a));
            }
        }
    }
}

impl<T> fmt::Debug for Op<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Builtin(b) => write!(f, "{}", b.name()),
            Op::User(_) => f.write_str("user"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_ops_wrap_and_bitwise_ops_work() {
        let mut acc = [250u8, 3, 0b1100];
        u8::apply(Builtin::Sum, &mut acc, &[10, 4, 0]);
        assert_eq!(acc, [4, 7, 0b1100]);
        let mut acc = [0b1100u8];
        u8::apply(Builtin::Bxor, &mut acc, &[0b1010]);
        assert_eq!(acc, [0b0110]);
        let mut acc = [-3i32, 7];
        i32::apply(Builtin::Min, &mut acc, &[2, 9]);
        assert_eq!(acc, [-3, 7]);
    }

    #[test]
    fn bitwise_ops_on_floats_are_refused() {
        assert!(Op::<f64>::Builtin(Builtin::Band).check().is_err());
        assert!(Op::<f32>::MAX.check().is_ok());
        assert!(Op::<i64>::Builtin(Builtin::Bor).check().is_ok());
    }

    #[test]
    fn unaligned_bytes_combine_like_aligned_ones() {
        let op = Op::<u32>::SUM;
        let acc_words = [1u32, 2, 3];
        let inc_words = [10u32, 20, 30];
        let mut acc = [0u8; 13];
        let mut inc = [0u8; 13];
        acc[1..].copy_from_slice(bytemuck::cast_slice(&acc_words));
        inc[1..].copy_from_slice(bytemuck::cast_slice(&inc_words));
        op.on_bytes(&mut acc[1..], &inc[1..]);
        let out: Vec<u32> = bytemuck::pod_collect_to_vec(&acc[1..]);
        assert_eq!(out, vec![11, 22, 33]);
    }
}
