"""Importing this module registers every port (``TAILOR_PYTHON=tailor.ports.registered`` makes
them available to the ``tailor`` command line built with ``--features python``)."""

from . import register_all

register_all()
