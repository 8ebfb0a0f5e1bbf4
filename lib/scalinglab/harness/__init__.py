"""The notebook harness: a notebook's profile, results folder and summary (``workbook``), and
``make reproduce`` (``reproduce``)."""
