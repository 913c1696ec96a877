#!/bin/sh
# on_rank_in.sh RANK FOLDER COMMAND...: runs COMMAND, on world rank RANK from
# FOLDER (as on a host whose file system lacks or differs in the document).
rank=$1 folder=$2
shift 2
if [ "${OMPI_COMM_WORLD_RANK:-0}" = "$rank" ]; then cd "$folder" || exit 9; fi
exec "$@"
