"""Reports: the verdict dictionaries commands print (``check``) and their terminal rendering."""
