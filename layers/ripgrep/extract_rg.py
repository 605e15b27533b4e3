"""Copy the rg binary out of a ripgrep wheel (a zip) to a destination path."""

import sys
import zipfile

wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    member = next(n for n in z.namelist() if n.endswith(".data/scripts/rg"))
    with open(dest, "wb") as out:
        out.write(z.read(member))
