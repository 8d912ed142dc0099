"""The storage engine: one partition's log of segments, and the logs of one broker.

* :mod:`.segment` with :mod:`.file_records`, :mod:`.offset_index`, :mod:`.time_index`
  (mechanics in :mod:`.index`) - one segment and its three files.
* :mod:`.log` - one partition: append, read, roll, truncate, retention, replacement.
* :mod:`.log_loader` - loading a partition after a clean or unclean shutdown.
* :mod:`.leader_epoch` - a partition's leader epochs and their checkpoint file.
* :mod:`.retention` - which segments retention removes.
* :mod:`.cleaner` - log compaction.
* :mod:`.log_manager` - the logs of a broker across JBOD directories.
* :mod:`.checkpoints`, :mod:`.config`, :mod:`.errors`.
"""
