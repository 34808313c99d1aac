#!/bin/sh
# PostgreSQL 15 runs a parallel hash join of two ROWS-row tables with WORKERS workers per
# gather and WORK_MEM: the shared hash table lives in dynamic shared memory, in /dev/shm.
# The cluster lives in a tmpfs and is gone with the container.
set -eu
bin=/usr/lib/postgresql/15/bin
mkdir -p /pg && chown postgres /pg
runuser -u postgres -- $bin/initdb -D /pg/data -A trust >/dev/null
runuser -u postgres -- $bin/pg_ctl -D /pg/data -l /pg/log -w -o "-c listen_addresses='' -k /pg -c max_worker_processes=8 -c max_parallel_workers=8" start >/dev/null
psql() { runuser -u postgres -- /usr/bin/psql -h /pg -X -q -v ON_ERROR_STOP=1 "$@"; }
echo "$($bin/postgres --version): rows=$ROWS workers=$WORKERS work_mem=$WORK_MEM"
psql -c "create table a as select g as id, g % 1000 as k from generate_series(1, $ROWS) g;
         create table b as select g as id, g % 1000 as k from generate_series(1, $ROWS) g;
         analyze a; analyze b;"
status=0
psql -c "set max_parallel_workers_per_gather = $WORKERS; set work_mem = '$WORK_MEM';
         set parallel_setup_cost = 0; set parallel_tuple_cost = 0; set enable_parallel_hash = on;
         set min_parallel_table_scan_size = 0;
         select count(*) from a join b using (id);" || status=$?
cat /pg/log | grep -E 'ERROR|FATAL' || true
runuser -u postgres -- $bin/pg_ctl -D /pg/data -m fast stop >/dev/null || true
exit $status
