"""A small bundled set of Python programming problems for code generation with execution feedback (the ``codegen``
family): twelve CodeContests-like problems of varied difficulty, written from scratch for this harness (not taken
from any dataset).

Each :class:`CodeProblem` has a statement a model sees (task, input and output format, constraints, one example),
a reference solution (a Python 3 program reading standard input and writing standard output) and two groups of
tests. The **public** tests are the only ones a model may see: they are what the feedback shows, when its program
is run on them and the failures are fed back for another try. The **private** tests are never shown: they decide
success, and include the edge cases (minimal inputs, large values, ties, repeats) that a sloppy program passing
the public tests can fail. Outputs are compared as competitive-programming checkers do (:func:`outputs_match`).

Standard library only; the data is literal (nothing is computed at import).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Test:
    """One test: the program's standard input and the output expected of it."""

    __test__ = False  # not a pytest test class (a class attribute, not a field)

    stdin: str
    expected: str


@dataclass(frozen=True)
class CodeProblem:
    """A problem: ``name`` (kebab-case id), ``statement`` (all a model is shown, with one example), ``public`` (2
    tests, shown to the model and used for feedback), ``private`` (6 to 8 tests, never shown, which decide success)
    and ``reference`` (a correct Python 3 program reading stdin and writing stdout)."""

    name: str
    statement: str
    public: tuple[Test, ...]
    private: tuple[Test, ...]
    reference: str


def outputs_match(got: str, expected: str) -> bool:
    """Whitespace-insensitive token comparison, as competitive-programming checkers do: the outputs split on
    whitespace are equal."""
    return got.split() == expected.split()


_SUM_OF_LIST = CodeProblem(
    name="sum-of-list",
    statement="""\
Given a list of integers, print their sum.

Input: the first line holds n (0 <= n <= 10^5), the number of integers. The second line holds the n integers
a_1 ... a_n separated by single spaces (|a_i| <= 10^18); when n = 0 the second line is empty.

Output: one line with the sum of the n integers (0 when n = 0).

Example: for the input
3
4 -1 10
the output is
13
""",
    public=(
        Test("3\n4 -1 10\n", "13\n"),
        Test("5\n1 2 3 4 5\n", "15\n"),
    ),
    private=(
        Test("0\n\n", "0\n"),
        Test("1\n-7\n", "-7\n"),
        Test("4\n1000000000000000000 1000000000000000000 1000000000000000000 -1\n", "2999999999999999999\n"),
        Test("3\n-5 -5 -5\n", "-15\n"),
        Test("6\n0 0 0 0 0 0\n", "0\n"),
        Test("2\n-1000000000000000000 999999999999999999\n", "-1\n"),
        Test("10\n9 8 7 6 5 4 3 2 1 0\n", "45\n"),
    ),
    reference="""\
import sys

data = sys.stdin.read().split()
n = int(data[0])
print(sum(int(x) for x in data[1:1 + n]))
""",
)

_COUNT_VOWELS = CodeProblem(
    name="count-vowels",
    statement="""\
Count the vowels in a line of text. The vowels are the letters a, e, i, o and u in either case (upper or lower);
y is not a vowel, and no other character counts.

Input: a single line of printable ASCII text (letters, digits, spaces, punctuation), 0 to 1000 characters long;
it may be empty.

Output: one line with the number of vowels in the text.

Example: for the input
hello world
the output is
3
""",
    public=(
        Test("hello world\n", "3\n"),
        Test("programming is fun\n", "5\n"),
    ),
    private=(
        Test("\n", "0\n"),
        Test("AEIOU aeiou\n", "10\n"),
        Test("rhythm myths by crypts\n", "0\n"),
        Test("Queueing Theory!\n", "7\n"),
        Test("12345 !?.,;\n", "0\n"),
        Test("The QUICK brown Fox jumps OVER the lazy dog.\n", "11\n"),
        Test("x\n", "0\n"),
    ),
    reference="""\
import sys

text = sys.stdin.read()
print(sum(1 for ch in text if ch in "aeiouAEIOU"))
""",
)

_REVERSE_WORDS = CodeProblem(
    name="reverse-words",
    statement="""\
Print the words of a line in reverse order. A word is a maximal run of characters other than spaces.

Input: a single line of at most 1000 characters made of letters, digits, punctuation and spaces. Words may be
separated by several spaces, and the line may start or end with spaces or hold no word at all.

Output: one line with the words in reverse order, separated by single spaces (an empty line when there is no
word).

Example: for the input
the quick brown fox
the output is
fox brown quick the
""",
    public=(
        Test("the quick brown fox\n", "fox brown quick the\n"),
        Test("one two\n", "two one\n"),
    ),
    private=(
        Test("single\n", "single\n"),
        Test("   \n", "\n"),
        Test("\n", "\n"),
        Test("  lots   of   spaces   here  \n", "here spaces of lots\n"),
        Test("a b c d e f g h i j\n", "j i h g f e d c b a\n"),
        Test("Hello, world! 42 times\n", "times 42 world! Hello,\n"),
        Test("same same same\n", "same same same\n"),
    ),
    reference="""\
import sys

line = sys.stdin.readline()
print(" ".join(reversed(line.split())))
""",
)

_BALANCED_BRACKETS = CodeProblem(
    name="balanced-brackets",
    statement="""\
Decide, for each of several strings of brackets, whether it is balanced. A string is balanced when every opening
bracket is closed by a closing bracket of the same type, the brackets close in the reverse order of their opening,
and no closing bracket appears without a matching opening bracket before it. The bracket types are (), [] and {}.

Input: the first line holds t (1 <= t <= 100). Each of the next t lines holds one non-empty string of at most
10^4 characters, each of them one of ( ) [ ] { }.

Output: t lines; line i is YES when string i is balanced and NO otherwise.

Example: for the input
3
()
([]{})
(()
the output is
YES
YES
NO
""",
    public=(
        Test("3\n()\n([]{})\n(()\n", "YES\nYES\nNO\n"),
        Test("2\n{[()()]}\n)(\n", "YES\nNO\n"),
    ),
    private=(
        Test("1\n([)]\n", "NO\n"),
        Test("4\n(\n)\n]\n{}\n", "NO\nNO\nNO\nYES\n"),
        Test("3\n{[}]\n[(])\n{([])}[]()\n", "NO\nNO\nYES\n"),
        Test("2\n((((((((((((((((((((((((((((((((((((((((\n(((((((((((((((((((()))))))))))))))))))))\n", "NO\nNO\n"),
        Test("1\n[]]\n", "NO\n"),
        Test("5\n{}[]()\n{[()]}\n{[(])}\n][\n(()[]{})\n", "YES\nYES\nNO\nNO\nYES\n"),
        Test("2\n()(\n{{}}}\n", "NO\nNO\n"),
    ),
    reference="""\
import sys

PAIRS = {")": "(", "]": "[", "}": "{"}


def balanced(s):
    stack = []
    for ch in s:
        if ch in "([{":
            stack.append(ch)
        elif not stack or stack.pop() != PAIRS[ch]:
            return False
    return not stack


words = sys.stdin.read().split()
t = int(words[0])
for s in words[1:1 + t]:
    print("YES" if balanced(s) else "NO")
""",
)

_KTH_SMALLEST = CodeProblem(
    name="kth-smallest",
    statement="""\
Given n integers and a number k, print the k-th smallest of them: the element at position k (counting from 1) of
the list sorted in non-decreasing order, repeated values counted as many times as they occur.

Input: the first line holds n and k (1 <= k <= n <= 10^5). The second line holds the n integers, separated by
single spaces (|a_i| <= 10^9).

Output: one line with the k-th smallest integer.

Example: for the input
5 2
7 3 9 1 5
the output is
3
""",
    public=(
        Test("5 2\n7 3 9 1 5\n", "3\n"),
        Test("4 4\n-2 8 0 -10\n", "8\n"),
    ),
    private=(
        Test("1 1\n42\n", "42\n"),
        Test("5 3\n1 1 1 2 3\n", "1\n"),
        Test("6 4\n5 5 4 4 3 3\n", "4\n"),
        Test("3 3\n-1000000000 1000000000 0\n", "1000000000\n"),
        Test("7 1\n9 -3 7 -3 8 10 -3\n", "-3\n"),
        Test("6 6\n2 2 2 2 2 2\n", "2\n"),
        Test("8 5\n10 20 10 30 20 10 40 30\n", "20\n"),
    ),
    reference="""\
import sys

data = sys.stdin.read().split()
n, k = int(data[0]), int(data[1])
values = sorted(int(x) for x in data[2:2 + n])
print(values[k - 1])
""",
)

_RUN_LENGTH_ENCODING = CodeProblem(
    name="run-length-encoding",
    statement="""\
Encode a string by run lengths: replace every maximal run of equal consecutive letters by the letter followed by
the length of the run in decimal. For example aaabcc becomes a3b1c2 and aabccca becomes a2b1c3a1.

Input: a single line holding a string s of lowercase English letters, 1 <= |s| <= 10^5.

Output: one line with the encoding of s.

Example: for the input
aaabcc
the output is
a3b1c2
""",
    public=(
        Test("aaabcc\n", "a3b1c2\n"),
        Test("xyzzz\n", "x1y1z3\n"),
    ),
    private=(
        Test("a\n", "a1\n"),
        Test("aabaa\n", "a2b1a2\n"),
        Test("abababab\n", "a1b1a1b1a1b1a1b1\n"),
        Test("zzzzzzzzzzzz\n", "z12\n"),
        Test("abc\n", "a1b1c1\n"),
        Test(("bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
              "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
              "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbba\n"),
             "b228a1\n"),
        Test("mississippi\n", "m1i1s2i1s2i1p2i1\n"),
    ),
    reference="""\
import sys

s = sys.stdin.readline().strip()
parts = []
i = 0
while i < len(s):
    j = i
    while j < len(s) and s[j] == s[i]:
        j += 1
    parts.append(s[i] + str(j - i))
    i = j
print("".join(parts))
""",
)

_GCD_OF_LIST = CodeProblem(
    name="gcd-of-list",
    statement="""\
Print the greatest common divisor of n non-negative integers: the largest integer that divides all of them.
Zero is divisible by every integer, so gcd(0, x) = x.

Input: the first line holds n (1 <= n <= 10^5). The second line holds n integers a_1 ... a_n separated by single
spaces (0 <= a_i <= 10^18); at least one of them is not zero.

Output: one line with the greatest common divisor.

Example: for the input
3
12 18 30
the output is
6
""",
    public=(
        Test("3\n12 18 30\n", "6\n"),
        Test("2\n7 13\n", "1\n"),
    ),
    private=(
        Test("1\n17\n", "17\n"),
        Test("3\n0 0 25\n", "25\n"),
        Test("4\n0 48 0 36\n", "12\n"),
        Test("2\n1000000000000000000 999999999999999999\n", "1\n"),
        Test("3\n1000000000000000000 500000000000000000 250000000000000000\n", "250000000000000000\n"),
        Test("5\n6 6 6 6 6\n", "6\n"),
        Test("3\n1 1000000000000000000 7\n", "1\n"),
        Test("2\n0 1000000000000000000\n", "1000000000000000000\n"),
    ),
    reference="""\
import sys
from math import gcd

data = sys.stdin.read().split()
n = int(data[0])
g = 0
for x in data[1:1 + n]:
    g = gcd(g, int(x))
print(g)
""",
)

_LONGEST_INCREASING_RUN = CodeProblem(
    name="longest-increasing-run",
    statement="""\
Find the length of the longest run of a sequence: the longest contiguous segment a_i < a_(i+1) < ... < a_j in
which every element is strictly greater than the one before it. A single element is a run of length 1.

Input: the first line holds n (1 <= n <= 10^5). The second line holds the n integers separated by single spaces
(|a_i| <= 10^9).

Output: one line with the length of the longest strictly increasing contiguous run.

Example: for the input
7
1 2 3 1 2 3 4
the output is
4
""",
    public=(
        Test("7\n1 2 3 1 2 3 4\n", "4\n"),
        Test("5\n5 4 3 2 1\n", "1\n"),
    ),
    private=(
        Test("1\n100\n", "1\n"),
        Test("5\n3 3 3 3 3\n", "1\n"),
        Test("6\n1 2 2 3 4 5\n", "4\n"),
        Test("6\n1 2 3 4 5 6\n", "6\n"),
        Test("4\n-5 -3 -1 -1\n", "3\n"),
        Test("8\n1 3 5 7 2 4 6 8\n", "4\n"),
        Test("7\n1 1 2 2 3 3 4\n", "2\n"),
    ),
    reference="""\
import sys

data = sys.stdin.read().split()
n = int(data[0])
a = [int(x) for x in data[1:1 + n]]
best = current = 1
for i in range(1, n):
    current = current + 1 if a[i] > a[i - 1] else 1
    best = max(best, current)
print(best)
""",
)

_MATRIX_TRANSPOSE = CodeProblem(
    name="matrix-transpose",
    statement="""\
Print the transpose of a matrix: the matrix whose row i is column i of the given one.

Input: the first line holds r and c (1 <= r, c <= 100), the numbers of rows and columns. Each of the next r lines
holds c integers separated by single spaces (|a_ij| <= 10^9).

Output: c lines of r integers each, separated by single spaces: line j holds column j of the input, top to bottom.

Example: for the input
2 3
1 2 3
4 5 6
the output is
1 4
2 5
3 6
""",
    public=(
        Test("2 3\n1 2 3\n4 5 6\n", "1 4\n2 5\n3 6\n"),
        Test("2 2\n1 2\n3 4\n", "1 3\n2 4\n"),
    ),
    private=(
        Test("1 1\n7\n", "7\n"),
        Test("1 4\n1 2 3 4\n", "1\n2\n3\n4\n"),
        Test("4 1\n1\n2\n3\n4\n", "1 2 3 4\n"),
        Test("3 3\n-1 0 1\n-2 0 2\n-3 0 3\n", "-1 -2 -3\n0 0 0\n1 2 3\n"),
        Test("3 2\n1000000000 -1000000000\n5 6\n7 8\n", "1000000000 5 7\n-1000000000 6 8\n"),
        Test("2 4\n1 2 3 4\n5 6 7 8\n", "1 5\n2 6\n3 7\n4 8\n"),
    ),
    reference="""\
import sys

data = sys.stdin.read().split()
r, c = int(data[0]), int(data[1])
cells = data[2:2 + r * c]
rows = [cells[i * c:(i + 1) * c] for i in range(r)]
for j in range(c):
    print(" ".join(rows[i][j] for i in range(r)))
""",
)

_PALINDROMIC_SUBSTRINGS = CodeProblem(
    name="palindromic-substrings",
    statement="""\
Count the palindromic substrings of a string. A substring is a contiguous, non-empty part of the string,
identified by its start and end positions: equal substrings at different positions are counted separately. A
palindrome reads the same forwards and backwards.

Input: a single line holding a string s of lowercase English letters, 1 <= |s| <= 2000.

Output: one line with the number of palindromic substrings of s.

Example: for the input
abc
the output is
3
(a, b and c; for aab the answer would be 4: a twice, b and aa.)
""",
    public=(
        Test("abc\n", "3\n"),
        Test("racecar\n", "10\n"),
    ),
    private=(
        Test("a\n", "1\n"),
        Test("aaa\n", "6\n"),
        Test("abba\n", "6\n"),
        Test("aaaaaaaaaa\n", "55\n"),
        Test("abacdcaba\n", "15\n"),
        Test("zz\n", "3\n"),
        Test("abcddcbaxyz\n", "15\n"),
    ),
    reference="""\
import sys

s = sys.stdin.readline().strip()
n = len(s)
count = 0
for center in range(2 * n - 1):
    left = center // 2
    right = left + center % 2
    while left >= 0 and right < n and s[left] == s[right]:
        count += 1
        left -= 1
        right += 1
print(count)
""",
)

_INTERVAL_MERGING = CodeProblem(
    name="interval-merging",
    statement="""\
Merge closed integer intervals. Two intervals [l1, r1] and [l2, r2] overlap when they share at least one point
(max(l1, l2) <= min(r1, r2)); touching at an endpoint counts, so [1, 3] and [3, 5] merge into [1, 5], while
[1, 2] and [3, 4] stay apart. Repeatedly merge overlapping intervals until no two overlap.

Input: the first line holds n (1 <= n <= 10^5). Each of the next n lines holds one interval as two integers l r
(-10^9 <= l <= r <= 10^9). The intervals are given in no particular order.

Output: the first line holds m, the number of merged intervals. Each of the next m lines holds one merged interval
as l r, in increasing order of l.

Example: for the input
3
1 3
2 6
8 10
the output is
2
1 6
8 10
""",
    public=(
        Test("3\n1 3\n2 6\n8 10\n", "2\n1 6\n8 10\n"),
        Test("2\n1 2\n5 7\n", "2\n1 2\n5 7\n"),
    ),
    private=(
        Test("1\n-4 -4\n", "1\n-4 -4\n"),
        Test("2\n1 3\n3 5\n", "1\n1 5\n"),
        Test("2\n1 2\n3 4\n", "2\n1 2\n3 4\n"),
        Test("3\n8 10\n1 3\n2 6\n", "2\n1 6\n8 10\n"),
        Test("3\n1 10\n2 3\n4 5\n", "1\n1 10\n"),
        Test("4\n5 5\n5 5\n0 0\n-1000000000 1000000000\n", "1\n-1000000000 1000000000\n"),
        Test("5\n20 25\n-3 0\n10 12\n0 2\n11 15\n", "3\n-3 2\n10 15\n20 25\n"),
    ),
    reference="""\
import sys

data = sys.stdin.read().split()
n = int(data[0])
intervals = sorted((int(data[1 + 2 * i]), int(data[2 + 2 * i])) for i in range(n))
merged = []
for left, right in intervals:
    if merged and left <= merged[-1][1]:
        merged[-1][1] = max(merged[-1][1], right)
    else:
        merged.append([left, right])
print(len(merged))
for left, right in merged:
    print(left, right)
""",
)

_BASE_CONVERSION = CodeProblem(
    name="base-conversion",
    statement="""\
Convert a non-negative integer from base a to base b. The digits of a base up to 36 are 0-9 followed by the
uppercase letters A-Z (A = 10, B = 11, ..., Z = 35).

Input: the first line holds a and b (2 <= a, b <= 36). The second line holds the number N written in base a with
uppercase digits: 1 to 100 digits, without leading zeros unless N is 0 (written as a single 0).

Output: one line with N written in base b, with uppercase digits and without leading zeros (0 when N is 0).

Example: for the input
10 2
10
the output is
1010
""",
    public=(
        Test("10 2\n10\n", "1010\n"),
        Test("16 10\nFF\n", "255\n"),
    ),
    private=(
        Test("10 2\n0\n", "0\n"),
        Test("2 10\n1\n", "1\n"),
        Test("36 10\nZZ\n", "1295\n"),
        Test("10 36\n1295\n", "ZZ\n"),
        Test("10 16\n18446744073709551616\n", "10000000000000000\n"),
        Test(("2 36\n111111111111111111111111111111111111111111111111111111111111111111111111111"
              "1111111111111111111111111\n"),
             "3EWFDNCA0N6LD1GGVFGF\n"),
        Test("7 7\n6543210\n", "6543210\n"),
        Test("16 2\nABCDEF\n", "101010111100110111101111\n"),
    ),
    reference="""\
import sys

DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
data = sys.stdin.read().split()
a, b, text = int(data[0]), int(data[1]), data[2]
value = 0
for ch in text:
    value = value * a + DIGITS.index(ch)
out = []
while True:
    value, digit = divmod(value, b)
    out.append(DIGITS[digit])
    if value == 0:
        break
print("".join(reversed(out)))
""",
)

PROBLEMS: tuple[CodeProblem, ...] = (
    _SUM_OF_LIST,
    _COUNT_VOWELS,
    _REVERSE_WORDS,
    _BALANCED_BRACKETS,
    _KTH_SMALLEST,
    _RUN_LENGTH_ENCODING,
    _GCD_OF_LIST,
    _LONGEST_INCREASING_RUN,
    _MATRIX_TRANSPOSE,
    _PALINDROMIC_SUBSTRINGS,
    _INTERVAL_MERGING,
    _BASE_CONVERSION,
)
