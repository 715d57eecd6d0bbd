"""Reports: the verdict dictionaries commands print (``check``) and their terminal rendering, and
the plain-text pieces other renderers share (:mod:`.text`)."""
