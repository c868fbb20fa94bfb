"""Bad-input corpus for `pipebench convert` and `pipebench data synth`: one line, nothing written, inputs untouched."""
from __future__ import annotations

import gzip
import os
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from badinput import Bad, bind_mount, cases, unmount_under
from tfdata import write_sample_tfrecord

from pipebench.converters import tfrecord

F = "4"
GOOD = b"1 1:1 2:0.5 3:1 4:1\n"
ROWS = GOOD * 200


RAW_GOOD = ("\t".join(["1", *["3"] * 13, *["68fd1e64"] * 26]) + "\n").encode()


def raw_with(bad_line: bytes) -> bytes:
    """Give good raw Criteo rows with `bad_line` as line 4."""
    return RAW_GOOD * 3 + bad_line + b"\n" + RAW_GOOD * 3


def raw_columns(**changed: str) -> bytes:
    """Give one raw Criteo line with the named columns (label, I1.., C1..) changed."""
    columns = RAW_GOOD.decode().rstrip("\n").split("\t")
    names = ["label", *(f"I{k}" for k in range(1, 14)), *(f"C{j}" for j in range(1, 27))]
    for name, text in changed.items():
        columns[names.index(name)] = text
    return "\t".join(columns).encode()


def criteo(*args: str) -> tuple[str, ...]:
    return ("convert", "--from", "criteo", *args)


def files(**content: bytes | Callable[[Path], None]) -> Callable[[Path], None]:
    """Give a `make` that writes each file with its bytes, or calls its maker on the path.

    Names are keywords: `__` stands for `/` and `_` for `.` (`d__x_libsvm` is `d/x.libsvm`).
    """

    def make(folder: Path) -> None:
        for name, data in content.items():
            path = folder / name.replace("__", "/").replace("_", ".")
            path.parent.mkdir(parents=True, exist_ok=True)
            data(path) if callable(data) else path.write_bytes(data)

    return make


def libsvm_with(bad_line: bytes) -> bytes:
    """Give good rows with `bad_line` as line 4."""
    return GOOD * 3 + bad_line + b"\n" + GOOD * 3


def examples(labels, ids, values) -> Callable[[Path], None]:
    """Give a maker of a TFRecord of Examples written by TensorFlow (the AWS sample's way)."""
    return lambda path: write_sample_tfrecord(path, labels, ids, values)


def good_examples(path: Path) -> None:
    write_sample_tfrecord(path, [1.0, 0.0, 1.0], [[1, 2, 3, 4]] * 3, [[1.0, 0.5, 1.0, 1.0]] * 3)


def framed(*payloads: bytes) -> bytes:
    """Give records with valid TFRecord framing around arbitrary bytes."""
    ends = np.cumsum([len(p) for p in payloads])
    data, _ = tfrecord.frame(np.frombuffer(b"".join(payloads), dtype=np.uint8), ends)
    return data.tobytes()


def not_an_example(path: Path) -> None:
    """A record of random bytes (seeded) between two good ones: the framing is valid, the content is not."""
    good_examples(path)
    good = path.read_bytes()
    rng = np.random.default_rng(12)
    path.write_bytes(good + framed(b"\x0a\x02\x0a\x00" + rng.bytes(60)) + good)


def impossible_length() -> bytes:
    """Give a TFRecord header whose length (1 TiB) has a valid checksum: framing no writer produces."""
    length = struct.pack("<Q", 1 << 40)
    return length + struct.pack("<I", tfrecord.masked_crc32c(length)) + b"x" * 100


def damaged(maker: Callable[[Path], None], edit: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    """Give a maker of what `maker` writes, with its bytes then changed by `edit`."""

    def make(path: Path) -> None:
        maker(path)
        path.write_bytes(edit(path.read_bytes()))

    return make


def flip(offset: int) -> Callable[[bytes], bytes]:
    return lambda data: data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1 :]


def convert(*args: str) -> tuple[str, ...]:
    return ("convert", *args, "--field-size", F)


def synth(*args: str) -> tuple[str, ...]:
    return ("data", "synth", "--rows", "50", "--field-size", "6", "--feature-size", "100", *args)


def mkfifo(path: Path) -> None:
    os.mkfifo(path)


def sparse(size: int) -> Callable[[Path], None]:
    """Give a maker of a file of `size` NUL bytes that takes no disk (a hole): one line that never ends."""
    def make(path: Path) -> None:
        with open(path, "wb") as f:
            f.truncate(size)
    return make


def repeated(byte: bytes, size: int, compressed: bool = False) -> Callable[[Path], None]:
    """Give a maker of `size` copies of `byte`; gzip-compressed (about size / 1000 bytes) when asked, as one
    gzip member per MiB (gzip and pipebench read concatenated members as one stream)."""
    def make(path: Path) -> None:
        block = byte * (1 << 20)
        if compressed:
            block = gzip.compress(block, compresslevel=9)
        with open(path, "wb") as f:
            for _ in range(size >> 20):
                f.write(block)
    return make


def hostile(*args: str) -> tuple[str, ...]:
    """Give convert's arguments for a hostile input: 39 fields (a row costs 500 bytes of arrays), 2 workers."""
    return ("convert", *args, "--field-size", "39", "--workers", "2")


#: The address space a refusal of a hostile input may use (imports and 2 workers reserve ~0.6 GB).
HOSTILE_MB = 1536


CASES = [
    # libsvm lines, one of each reason (the FILE:LINE: reason format)
    Bad("libsvm_empty_line", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: empty line$",
        files(in_libsvm=libsvm_with(b"")), out="o", code=1, process=True),
    Bad("libsvm_pair_count", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: expected 4 id:value pairs, found 2$",
        files(in_libsvm=libsvm_with(b"1 1:1 2:1")), out="o", code=1),
    Bad("libsvm_bad_label", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: label 'yes' is not a number$",
        files(in_libsvm=libsvm_with(b"yes 1:1 2:1 3:1 4:1")), out="o", code=1),
    Bad("libsvm_label_range", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: label '2' is outside \[0, 1\]",
        files(in_libsvm=libsvm_with(b"2 1:1 2:1 3:1 4:1")), out="o", code=1),
    Bad("libsvm_missing_colon", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: pair 2 '21' has no ':'",
        files(in_libsvm=libsvm_with(b"1 1:1 21 3:1 4:1")), out="o", code=1),
    Bad("libsvm_bad_id", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: pair 2 'a:1': id 'a' is not",
        files(in_libsvm=libsvm_with(b"1 1:1 a:1 3:1 4:1")), out="o", code=1),
    Bad("libsvm_negative_id", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: pair 3 '-3:1': id is negative$",
        files(in_libsvm=libsvm_with(b"1 1:1 2:1 -3:1 4:1")), out="o", code=1),
    Bad("libsvm_id_range", convert("in.libsvm", "--out", "o", "--feature-size", "10"),
        r"^in\.libsvm:4: pair 4 '40:1': id 40 is not below feature_size 10$",
        files(in_libsvm=libsvm_with(b"1 1:1 2:1 3:1 40:1")), out="o", code=1),
    Bad("libsvm_bad_value", convert("in.libsvm", "--out", "o"), r"^in\.libsvm:4: pair 2 '2:nan': value 'nan' is not",
        files(in_libsvm=libsvm_with(b"1 1:1 2:nan 3:1 4:1")), out="o", code=1),
    Bad("libsvm_value_range", convert("in.libsvm", "--out", "o"),
        r"^in\.libsvm:4: pair 2 '2:1e39': value '1e39' overflows float32$",
        files(in_libsvm=libsvm_with(b"1 1:1 2:1e39 3:1 4:1")), out="o", code=1),
    Bad("libsvm_whitespace", convert("in.libsvm", "--out", "o"),
        r"^in\.libsvm:4: unexpected whitespace at column 6: a tab",
        files(in_libsvm=libsvm_with(b"1 1:1\t2:1 3:1 4:1")), out="o", code=1),
    # item 4: a 1 MiB junk line is named, not echoed
    Bad("junk_line_of_1_mib_is_cut_short", convert("in.libsvm", "--out", "o"),
        r"^in\.libsvm:4: label 'x{40}…' \(1,048,576 bytes\) is not a number$",
        files(in_libsvm=libsvm_with(b"x" * (1 << 20))), out="o", code=1),
    # bounded cost: refused at the stated line limit or at the first bad line, in memory that does not grow
    Bad("line_without_end_is_refused_at_the_limit", hostile("in.libsvm", "--out", "o"),
        r"^in\.libsvm:1: line longer than 4,194,304 bytes \(not line-oriented text: a binary or damaged file\?\)$",
        files(in_libsvm=sparse(64 << 20)), out="o", code=1, memory_mb=HOSTILE_MB),
    Bad("gzip_of_1_gib_without_newline", hostile("in.libsvm.gz", "--out", "o"),
        r"^in\.libsvm\.gz:1: line longer than 4,194,304 bytes", files(in_libsvm_gz=repeated(b"\0", 1 << 30, True)),
        out="o", code=1, memory_mb=HOSTILE_MB),
    Bad("long_line_after_good_ones_names_its_line", convert("in.libsvm", "--out", "o"),
        r"^in\.libsvm:4: line longer than 4,194,304 bytes", files(in_libsvm=libsvm_with(b"1" * (5 << 20))), out="o",
        code=1),
    Bad("criteo_line_without_end", criteo("in.txt", "--out", "o", "--workers", "2"),
        r"^in\.txt:1: line longer than 4,194,304 bytes", files(in_txt=sparse(64 << 20)), out="o", code=1,
        memory_mb=HOSTILE_MB),
    Bad("empty_lines_stop_at_the_first", hostile("in.libsvm", "--out", "o"), r"^in\.libsvm:1: empty line$",
        files(in_libsvm=repeated(b"\n", 64 << 20)), out="o", code=1, memory_mb=HOSTILE_MB),
    Bad("gzip_of_1_gib_of_empty_lines", hostile("in.libsvm.gz", "--out", "o"), r"^in\.libsvm\.gz:1: empty line$",
        files(in_libsvm_gz=repeated(b"\n", 1 << 30, True)), out="o", code=1, memory_mb=HOSTILE_MB),
    Bad("criteo_empty_lines", criteo("in.txt", "--out", "o", "--workers", "2"), r"^in\.txt:1: empty line$",
        files(in_txt=repeated(b"\n", 64 << 20)), out="o", code=1, memory_mb=HOSTILE_MB),
    # item 2: TFRecord rows by the same rules, any output format
    Bad("tfrecord_label_outside_0_1", convert("in.tfrecord", "--out", "o", "--format", "libsvm"),
        r"^in\.tfrecord:2: label '2' is outside \[0, 1\]",
        files(in_tfrecord=examples([1.0, 2.0], [[1, 2, 3, 4]] * 2, [[1.0] * 4] * 2)), out="o", code=1, tf=True),
    Bad("tfrecord_nan_label", convert("in.tfrecord", "--out", "o", "--format", "packed"),
        r"^in\.tfrecord:1: label 'nan' is not a number$",
        files(in_tfrecord=examples([float("nan")], [[1, 2, 3, 4]], [[1.0] * 4])), out="o", code=1, tf=True),
    Bad("tfrecord_negative_id_to_tfrecord", convert("in.tfrecord", "--out", "o", "--format", "tfrecord"),
        r"^in\.tfrecord:3: pair 2 '-7:1': id is negative$",
        files(in_tfrecord=examples([1.0] * 3, [[1, 2, 3, 4]] * 2 + [[1, -7, 3, 4]], [[1.0] * 4] * 3)), out="o", code=1, tf=True),
    Bad("tfrecord_infinite_value", convert("in.tfrecord", "--out", "o", "--format", "packed"),
        r"^in\.tfrecord:1: pair 3 '3:inf': value 'inf' is not a number$",
        files(in_tfrecord=examples([1.0], [[1, 2, 3, 4]], [[1.0, 1.0, float("inf"), 1.0]])), out="o", code=1, tf=True),
    Bad("tfrecord_id_beyond_feature_size", convert("in.tfrecord", "--out", "o", "--feature-size", "4"),
        r"^in\.tfrecord:1: pair 4 '4:1': id 4 is not below feature_size 4$",
        files(in_tfrecord=examples([1.0], [[1, 2, 3, 4]], [[1.0] * 4])), out="o", code=1, tf=True),
    Bad("tfrecord_record_not_an_example", convert("in.tfrecord", "--out", "o", "--format", "libsvm"),
        r"^in\.tfrecord:4: (not a tf\.train\.Example|a tf\.train\.Example not of the schema)",
        files(in_tfrecord=not_an_example), out="o", code=1, tf=True),
    Bad("tfrecord_of_another_schema", convert("in.tfrecord", "--out", "o"),
        r"^in\.tfrecord:1: a tf\.train\.Example not of the schema label float\[1\], ids int64\[4\]",
        files(in_tfrecord=examples([1.0], [[1, 2, 3]], [[1.0] * 3])), out="o", code=1, tf=True),
    Bad("tfrecord_crc_error_is_one_line_without_tf_logs", convert("in.tfrecord", "--out", "o", "--format", "libsvm"),
        r"^in\.tfrecord:1: corrupt record: the data's checksum does not match",
        files(in_tfrecord=damaged(good_examples, flip(20))), out="o", code=1, process=True, tf=True),
    Bad("tfrecord_length_crc_error", convert("in.tfrecord", "--out", "o"),
        r"^in\.tfrecord:2: corrupt record framing: the length's checksum does not match",
        files(in_tfrecord=damaged(good_examples, lambda data: flip(len(data) // 3 + 9)(data))), out="o", code=1, tf=True),
    Bad("tfrecord_impossible_length", convert("in.tfrecord", "--out", "o"),
        r"^in\.tfrecord:1: corrupt record framing: a length over 2,147,483,648 bytes",
        files(in_tfrecord=impossible_length()), out="o", code=1, tf=True),
    Bad("tfrecord_truncated", convert("in.tfrecord", "--out", "o"),
        r"^in\.tfrecord:3: the file ends inside this record \(a truncated file\)$",
        files(in_tfrecord=damaged(good_examples, lambda data: data[:-5])), out="o", code=1, tf=True),
    # compressed-file damage
    Bad("gzip_truncated", convert("in.libsvm.gz", "--out", "o"), r"^in\.libsvm\.gz: the gzip data ends early",
        files(in_libsvm_gz=gzip.compress(ROWS)[:-30]), out="o", code=1),
    Bad("gzip_with_garbage_tail", convert("in.libsvm.gz", "--out", "o"),
        r"^in\.libsvm\.gz: bytes after the end of the gzip data, at 4,000 bytes, are not gzip data",
        files(in_libsvm_gz=gzip.compress(ROWS) + b"garbage tail"), out="o", code=1),
    Bad("gzip_corrupt_body", convert("in.libsvm.gz", "--out", "o"), r"^in\.libsvm\.gz: damaged gzip data after",
        files(in_libsvm_gz=flip(12)(gzip.compress(ROWS))), out="o", code=1),
    Bad("zlib_truncated_tfrecord", convert("in.tfrecord.zz", "--out", "o"),
        r"^in\.tfrecord\.zz: the zlib data ends early",
        files(in_tfrecord_zz=damaged(good_examples, lambda data: zlib.compress(data)[:-8])), out="o", code=1, tf=True),
    # bad option values (refused by the request's own check: one line already)
    Bad("shard_mb_huge", convert("in.libsvm", "--out", "o", "--shard-mb", "1e308"),
        r"^convert: argument --shard-mb: must be above 0 and at most 1,048,576, not 1e308", files(in_libsvm=ROWS),
        out="o", code=2),
    Bad("packed_feature_size_beyond_int32", convert("in.libsvm", "--out", "o", "--format", "packed",
                                                    "--feature-size", str(2**31 + 1)),
        r"--format packed stores ids as int32", files(in_libsvm=ROWS), out="o", code=2),
    Bad("libsvm_output_from_libsvm_input", convert("in.libsvm", "--out", "o", "--format", "libsvm"),
        r"the inputs are not TFRecord files", files(in_libsvm=ROWS), out="o", code=2),
    Bad("mixed_tfrecord_and_libsvm_inputs", convert("a.tfrecord", "b.libsvm", "--out", "o"),
        r"^a\.tfrecord is TFRecord but b\.libsvm is not", files(a_tfrecord=good_examples, b_libsvm=ROWS),
        out="o", code=2, tf=True),
    Bad("shard_mb_inf", convert("in.libsvm", "--out", "o", "--shard-mb", "inf"),
        r"--shard-mb: must be above 0 and at most 1,048,576, not (inf|nan)", files(in_libsvm=ROWS), out="o", code=2),
    Bad("shard_mb_nan", convert("in.libsvm", "--out", "o", "--shard-mb", "nan"),
        r"--shard-mb: must be above 0 and at most 1,048,576, not (inf|nan)", files(in_libsvm=ROWS), out="o", code=2),
    # item 1: outputs that overlap an input
    Bad("out_holds_the_input_folder", convert("d/x.libsvm", "--out", "d", "--force"),
        r"^output d contains the input d/x\.libsvm", files(d__x_libsvm=ROWS), code=2),
    Bad("out_is_the_input_file", convert("d/x.libsvm", "--out", "d/x.libsvm", "--force"),
        r"^output d/x\.libsvm is the input d/x\.libsvm", files(d__x_libsvm=ROWS), code=2),
    Bad("out_inside_the_input", convert("x.libsvm", "--out", "x.libsvm/o"),
        r"^output x\.libsvm/o is inside the input x\.libsvm", files(x_libsvm=ROWS), code=2),
    Bad("out_is_a_symlink_to_the_input_folder", convert("d/x.libsvm", "--out", "link", "--force"),
        r"^output link contains the input d/x\.libsvm",
        lambda folder: (files(d__x_libsvm=ROWS)(folder), (folder / "link").symlink_to("d")), code=2),
    Bad("out_is_a_symlink_to_an_ancestor_of_the_input", convert("d/sub/x.libsvm", "--out", "alias", "--force"),
        r"^output alias contains the input d/sub/x\.libsvm",
        lambda folder: (files(d__sub__x_libsvm=ROWS)(folder), (folder / "alias").symlink_to("d")), code=2),
    Bad("out_is_a_hard_link_of_the_input", convert("in.libsvm", "--out", "same.libsvm", "--force"),
        r"^output same\.libsvm is the input in\.libsvm",
        lambda folder: (files(in_libsvm=ROWS)(folder), os.link(folder / "in.libsvm", folder / "same.libsvm")), code=2),
    Bad("out_is_an_existing_file_with_force", convert("in.libsvm", "--out", "notes.txt", "--force"),
        r"^notes\.txt: is a file, not an output folder", files(in_libsvm=ROWS, notes_txt=b"keep me\n"), code=2),
    Bad("out_exists_without_force", convert("in.libsvm", "--out", "o"), r"^o: already exists \(use --force",
        files(in_libsvm=ROWS, o__keep=b"x"), code=2),
    # unwritable or impossible outputs (a read-only folder: see test_convert.py, it needs capabilities dropped)
    Bad("out_parent_is_a_file", convert("in.libsvm", "--out", "f/sub/o"),
        r"^f/sub/o: cannot create the output folder: f is a file, not a folder$",
        files(in_libsvm=ROWS, f=b"a file"), code=2),
    Bad("out_parents_made_for_a_failed_run_are_removed", convert("in.libsvm", "--out", "new/deeper/o"),
        r"^in\.libsvm:4: empty line$", files(in_libsvm=libsvm_with(b"")), out="new", code=1),
    # item 4: nothing to write is an error, not an empty data set
    Bad("empty_input", convert("in.libsvm", "--out", "o"), r"^in\.libsvm: no rows: the input is empty",
        files(in_libsvm=b""), out="o", code=1),
    Bad("every_row_rejected_with_skip", convert("in.libsvm", "--out", "o", "--on-error", "skip"),
        r"^in\.libsvm: all 3 rows were rejected \(2 bad_label, 1 empty_line\); nothing written$",
        files(in_libsvm=b"x\n\ny 1:1\n"), out="o", code=1),
    Bad("every_row_rejected_with_quarantine", convert("in.tfrecord", "--out", "o", "--on-error", "quarantine"),
        r"^in\.tfrecord: all 2 rows were rejected \(2 label_range\)",
        files(in_tfrecord=examples([3.0, -1.0], [[1, 2, 3, 4]] * 2, [[1.0] * 4] * 2)), out="o", code=1, tf=True),
    # item 4: inputs that are not regular files say what they are
    Bad("input_is_a_directory", convert("d", "--out", "o"), r"^d: is a directory, not a file",
        files(d__x_libsvm=ROWS), out="o", code=2),
    Bad("input_is_a_fifo", convert("pipe", "--out", "o"), r"^pipe: is a FIFO \(pipe\), not a regular file",
        files(pipe=mkfifo), out="o", code=2),
    Bad("input_is_stdin", convert("/dev/stdin", "--out", "o"), r"^/dev/stdin: is a FIFO \(pipe\), not a regular file",
        out="o", code=2, stdin=ROWS),
    Bad("input_missing", convert("nope.libsvm", "--out", "o"), r"^nope\.libsvm: no such file$", out="o", code=2),
    Bad("raw_criteo_without_from_criteo", convert("in.txt", "--out", "o"),
        r"^in\.txt looks like raw Criteo rows \(40 tab-separated columns: label, I1-I13, C1-C26\), not libsvm; "
        r"add --from criteo$", files(in_txt=RAW_GOOD * 3), out="o", code=2),
    # raw Criteo lines (--from criteo), one of each reason; the first pass already stops at them
    Bad("criteo_column_count", criteo("in.txt", "--out", "o"),
        r"^in\.txt:4: expected 40 tab-separated columns \(label, I1-I13, C1-C26\), found 41$",
        files(in_txt=raw_with(raw_columns() + b"\t")), out="o", code=1),
    Bad("criteo_test_file_without_labels", criteo("test.txt", "--out", "o"),
        r"^test\.txt:1: expected 40 .*found 39 \(Kaggle's test\.txt has no label column\)$",
        files(test_txt=b"\t".join(raw_columns().split(b"\t")[1:]) + b"\n"), out="o", code=1),
    Bad("criteo_empty_line", criteo("in.txt", "--out", "o"), r"^in\.txt:4: empty line$",
        files(in_txt=raw_with(b"")), out="o", code=1),
    Bad("criteo_label_not_0_or_1", criteo("in.txt", "--out", "o"), r"^in\.txt:4: label '2' is not 0 or 1$",
        files(in_txt=raw_with(raw_columns(label="2"))), out="o", code=1),
    Bad("criteo_missing_label", criteo("in.txt", "--out", "o"), r"^in\.txt:4: label '' is not 0 or 1$",
        files(in_txt=raw_with(raw_columns(label=""))), out="o", code=1),
    Bad("criteo_integer_not_a_number", criteo("in.txt", "--out", "o", "--format", "packed"),
        r"^in\.txt:4: I7 'abc' is not an integer", files(in_txt=raw_with(raw_columns(I7="abc"))), out="o", code=1),
    Bad("criteo_integer_with_a_fraction", criteo("in.txt", "--out", "o"), r"^in\.txt:4: I1 '2\.5' is not an integer",
        files(in_txt=raw_with(raw_columns(I1="2.5"))), out="o", code=1),
    Bad("criteo_integer_beyond_int64", criteo("in.txt", "--out", "o"),
        r"^in\.txt:4: I13 '9{19}' is not an integer \(at most 18 digits\)$",
        files(in_txt=raw_with(raw_columns(I13="9" * 19))), out="o", code=1),
    Bad("criteo_bad_hex", criteo("in.txt", "--out", "o"), r"^in\.txt:4: C2 '68fd1e6g' is not 8 lowercase hex digits$",
        files(in_txt=raw_with(raw_columns(C2="68fd1e6g"))), out="o", code=1),
    Bad("criteo_short_hex", criteo("in.txt", "--out", "o", "--format", "libsvm"),
        r"^in\.txt:4: C26 '1e64' is not 8 lowercase hex digits$",
        files(in_txt=raw_with(raw_columns(C26="1e64"))), out="o", code=1),
    Bad("criteo_bad_line_in_gzip", criteo("in.txt.gz", "--out", "o"), r"^in\.txt\.gz:4: C1 'XYZ' is not 8",
        files(in_txt_gz=gzip.compress(raw_with(raw_columns(C1="XYZ")))), out="o", code=1),
    Bad("criteo_feature_map_not_json", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json:1: not valid JSON: ", files(in_txt=RAW_GOOD, map_json=b"{oops"), out="o", code=1),
    Bad("criteo_feature_map_nested_too_deeply", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json: not valid JSON for pipebench: nested too deeply$",
        files(in_txt=RAW_GOOD, map_json=b"[" * 100_000 + b"]" * 100_000), out="o", code=1),
    Bad("criteo_feature_map_of_a_newer_version", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json: feature_map_version 99 was written by a newer pipebench \(this one reads 1\): update pipebench$",
        files(in_txt=RAW_GOOD, map_json=b'{"feature_map_version": 99}'), out="o", code=1),
    Bad("criteo_feature_map_of_an_older_version", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json: feature_map_version 0 is older than the 1 this pipebench reads: make it again with pipebench "
        r"convert --from criteo$", files(in_txt=RAW_GOOD, map_json=b'{"feature_map_version": 0}'), out="o", code=1),
    Bad("criteo_feature_map_without_version", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json: not a feature map \(no schema_version\)$",
        files(in_txt=RAW_GOOD, map_json=b'{"cutoff": 3}'), out="o", code=1),
    Bad("criteo_feature_map_a_key_short", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json: made_by: missing$",
        files(in_txt=RAW_GOOD, map_json=b'{"schema_version": 1, "cutoff": 3}'), out="o", code=1),
    Bad("criteo_feature_map_missing", criteo("in.txt", "--out", "o", "--feature-map", "map.json"),
        r"^map\.json: no such file$", files(in_txt=RAW_GOOD), out="o", code=2),
    Bad("criteo_tfrecord_input", criteo("in.tfrecord", "--out", "o"),
        r"^in\.tfrecord is TFRecord, not raw Criteo text; drop --from criteo$", files(in_tfrecord=good_examples),
        out="o", code=2, tf=True),
    Bad("feature_map_without_from_criteo", convert("in.libsvm", "--out", "o", "--feature-map", "in.libsvm"),
        r"--feature-map and --cutoff apply to raw Criteo input: add --from criteo", files(in_libsvm=ROWS), out="o",
        code=2),
    Bad("criteo_every_row_rejected", criteo("in.txt", "--out", "o", "--on-error", "skip"),
        r"^in\.txt: all 2 rows were rejected \(1 bad_label, 1 bad_hex\); nothing written$",
        files(in_txt=raw_columns(label="x") + b"\n" + raw_columns(C3="-") + b"\n"), out="o", code=1),
    Bad("synth_criteo_other_field_size", synth("--out", "o", "--format", "criteo"),
        r"--format criteo writes Kaggle's 39 fields; drop --field-size 6", out="o", code=2),
    # data synth: bad options and outputs
    Bad("synth_out_is_an_existing_file_with_force", synth("--out", "notes.txt", "--force"),
        r"^notes\.txt: is a file, not an output folder", files(notes_txt=b"keep me\n"), code=2),
    Bad("synth_out_holds_the_current_folder", synth("--out", ".", "--force"),
        r"^\.: holds the current folder; --force would delete it$", files(keep_txt=b"x"), code=2),
    Bad("synth_out_parent_is_a_file", synth("--out", "f/o"), r"^f/o: cannot create the output folder: f is a file",
        files(f=b"a file"), code=2),
    Bad("synth_out_exists_without_force", synth("--out", "o"), r"^o: already exists", files(o__keep=b"x"), code=2),
    Bad("synth_positive_rate_above_1", synth("--out", "o", "--positive-rate", "1.5"), r"--positive-rate",
        out="o", code=2),
    Bad("synth_positive_rate_nan", synth("--out", "o", "--positive-rate", "nan"), r"--positive-rate", out="o", code=2),
    Bad("synth_feature_size_too_small", synth("--out", "o", "--feature-size", "5"), r"--feature-size 5 is too small",
        out="o", code=2),
    Bad("synth_negative_seed", synth("--out", "o", "--seed", "-1"), r"--seed: must be from 0 to 9,223,372,036,854,775,807, not -1",
        out="o", code=2),
    Bad("synth_more_files_than_rows", synth("--out", "o", "--files", "51"), r"--files 51 exceeds --rows 50",
        out="o", code=2),
    Bad("synth_zlib_libsvm", synth("--out", "o", "--compression", "zlib"), r"--compression must be none or gzip",
        out="o", code=2),
]


@pytest.mark.parametrize("case", cases(CASES))
def test_refused(case: Bad, tmp_path: Path, run_case) -> None:
    run_case(case, tmp_path)


def _bound(source: str, point: str, **content: bytes) -> Callable[[Path], None]:
    """Give a make() that writes `content` (names as in files()) and bind-mounts folder `source` at `point`."""
    def make(folder: Path) -> None:
        files(**content)(folder)
        bind_mount(folder / source, folder / point)
    return make


# Item 2 of issue 28: a bind mount (a container's -v) is not a symlink, and --force deleted the input through it.
MOUNTED = [
    Bad("input_reached_through_a_bind_mount_of_out", convert("mnt/x.libsvm", "--out", "o", "--force"),
        r"^output o contains the input mnt/x\.libsvm", _bound("o", "mnt", o__x_libsvm=ROWS), code=2),
    Bad("out_is_a_bind_mount_of_the_input_folder", convert("o/x.libsvm", "--out", "mnt", "--force"),
        r"^output mnt contains the input o/x\.libsvm", _bound("o", "mnt", o__x_libsvm=ROWS), code=2),
    Bad("input_folder_is_a_bind_mount_of_a_folder_inside_out", convert("data/x.libsvm", "--out", "o", "--force"),
        r"^output o contains the input data/x\.libsvm", _bound("o/sub", "data", o__sub__x_libsvm=ROWS), code=2),
    Bad("out_inside_a_bind_mount_of_the_input", convert("x.libsvm", "--out", "mnt/x.libsvm/o"),
        r"^output mnt/x\.libsvm/o is inside the input x\.libsvm",
        lambda folder: (files(x_libsvm=ROWS)(folder), bind_mount(folder, folder / "mnt")), code=2),
]


@pytest.mark.slow  # mount and umount are processes
@pytest.mark.parametrize("case", cases(MOUNTED))
def test_refused_through_a_bind_mount(case: Bad, tmp_path: Path, run_case) -> None:
    """Needs root for `mount --bind` (skipped, saying so, elsewhere); the mounts are undone whatever happens."""
    try:
        run_case(case, tmp_path)
    finally:
        unmount_under(tmp_path)
