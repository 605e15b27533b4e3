"""Letters that look like ASCII (Cyrillic, Greek, Armenian, fullwidth, mathematical) folded to it, one for one, for names."""

from __future__ import annotations

import re
import unicodedata

# Only look-alikes a key name could be typed with by accident or on purpose (`pаssword` with a
# Cyrillic а, `ｐａｓｓｗｏｒｄ` from a CJK input method); each maps to one character, so positions
# in a folded text are the original's.
_LOOK_ALIKES = {
    **dict(zip("аеорсухѕіјԁһӏкԛԝ", "aeopcyxsijdhlkqw", strict=True)),
    **dict(zip("АВЕКМНОРСТХЅІЈ", "ABEKMHOPCTXSIJ", strict=True)),
    **dict(zip("αοριυκνχτ", "aopiukvxt", strict=True)),
    **dict(zip("ΑΒΕΗΙΚΜΝΟΡΤΧΥΖ", "ABEHIKMNOPTXYZ", strict=True)),
    **dict(zip("тոօսհɡ", "tnouhg", strict=True)),  # Cyrillic te, Armenian, Latin script g
    # Fullwidth forms U+FF01..U+FF5E are ASCII U+0021..U+007E shifted.
    **{chr(c): chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)},
}
# Mathematical letters and digits (`𝐩𝐚𝐬𝐬𝐰𝐨𝐫𝐝`, bold, italic, script, double-struck, …): each is
# one code point that NFKC reads as one ASCII letter or digit. A block of their own, found by one
# range: hundreds of astral characters in the class above would be tried one by one at every
# character of a text.
_MATH = {
    chr(c): folded
    for c in range(0x1D400, 0x1D800)
    if len(folded := unicodedata.normalize("NFKC", chr(c))) == 1
    and folded.isascii()
    and folded.isalnum()
}
_ANY_MATH = re.compile("[\U0001d400-\U0001d7ff]")
# str.translate would walk every character through a table (about a second for a 1 MB YAML file
# with one non-ASCII letter in it); a character class finds the few look-alikes there are at once.
_ANY_LOOK_ALIKE = re.compile("[" + "".join(re.escape(c) for c in _LOOK_ALIKES) + "]")


def fold(text: str) -> str:
    """`text` with look-alike letters as the ASCII they imitate; same length, same positions."""
    if text.isascii():
        return text
    text = _ANY_LOOK_ALIKE.sub(lambda m: _LOOK_ALIKES[m.group()], text)
    return _ANY_MATH.sub(lambda m: _MATH.get(m.group(), m.group()), text)
