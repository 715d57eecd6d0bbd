"""Reports: the verdict dictionaries commands print (``check``, with its closing totals) and their
terminal rendering, the plain-text pieces other renderers share (:mod:`.text`), and the
self-contained HTML report (:mod:`.html`)."""
