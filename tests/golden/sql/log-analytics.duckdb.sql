-- jobdoctor: bigquery-log-analytics test-project.logs._AllLogs, window: 2024-01-01T00:00:00Z .. 2024-02-01T00:00:00Z (31d) over test-project.logs._AllLogs
-- parameters:
--   @start TIMESTAMP = 2024-01-01T00:00:00Z
--   @end TIMESTAMP = 2024-02-01T00:00:00Z
--   @job_ids ARRAY<STRING> = ['8501620632646057984']

-- Query B: first, last and count per job, trial, task and VM
SELECT
  job,
  trial,
  task,
  vm,
  skip,
  other_resource,
  MIN(time) AS first,
  MAX(time) AS last,
  COUNT(*) AS records,
  LISTAGG(
    
      DISTINCT CAST(CAST(EPOCH(DATE_TRUNC('MINUTE', time)) AS BIGINT) // 60 AS TEXT),
      ','
    
  ) AS minutes
FROM (
  SELECT
    '_AllLogs' AS tbl,
    c_insert_id AS insert_id,
    c_timestamp AS time,
    c_severity AS severity,
    COALESCE(
      NULLIF(JSON_VALUE(c_resource_labels, '$.job_id') ->> '$', ''),
      NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/job_id"') ->> '$', '')
    ) AS job,
    COALESCE(
      NULLIF(JSON_VALUE(c_labels, '$.trial_id') ->> '$', ''),
      NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/trial_id"') ->> '$', '')
    ) AS trial,
    COALESCE(
      NULLIF(JSON_VALUE(c_resource_labels, '$.task_name') ->> '$', ''),
      NULLIF(JSON_VALUE(c_labels, '$.task_name') ->> '$', ''),
      NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/task_name"') ->> '$', ''),
      NULLIF(
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.attrs.tag)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.attrs.tag, '$') ->> '$'
          ELSE NULL
        END,
        ''
      )
    ) AS task,
    NULLIF(JSON_VALUE(c_labels, '$."compute.googleapis.com/resource_id"') ->> '$', '') AS vm,
    COALESCE(
      CASE
        WHEN LOWER(JSON_TYPE(c_json_payload.message)) IN ('string', 'varchar')
        THEN JSON_VALUE(c_json_payload.message, '$') ->> '$'
        ELSE NULL
      END,
      c_text_payload,
      CASE
        WHEN LOWER(JSON_TYPE(c_json_payload.msg)) IN ('string', 'varchar')
        THEN JSON_VALUE(c_json_payload.msg, '$') ->> '$'
        ELSE NULL
      END,
      CASE
        WHEN LOWER(JSON_TYPE(c_json_payload.log)) IN ('string', 'varchar')
        THEN JSON_VALUE(c_json_payload.log, '$') ->> '$'
        ELSE NULL
      END,
      CASE
        WHEN LOWER(JSON_TYPE(c_json_payload.text)) IN ('string', 'varchar')
        THEN JSON_VALUE(c_json_payload.text, '$') ->> '$'
        ELSE NULL
      END,
      CASE
        WHEN LOWER(JSON_TYPE(c_json_payload.event)) IN ('string', 'varchar')
        THEN JSON_VALUE(c_json_payload.event, '$') ->> '$'
        ELSE NULL
      END,
      CASE
        WHEN LOWER(JSON_TYPE(c_json_payload)) = 'object'
        AND CAST(TO_JSON(c_json_payload) AS TEXT) <> '{}'
        THEN CAST(TO_JSON(c_json_payload) AS TEXT)
        ELSE NULL
      END
    ) AS text,
    CASE
      WHEN NOT c_proto_payload IS NULL
      THEN 'audit log entry (protoPayload)'
      WHEN c_resource_type <> '' AND NOT c_resource_type IN ('cloudml_job', 'ml_job')
      THEN 'other resource type: '
      WHEN COALESCE(
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.message)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.message, '$') ->> '$'
          ELSE NULL
        END,
        c_text_payload,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.msg)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.msg, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.log)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.log, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.text)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.text, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.event)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.event, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload)) = 'object'
          AND CAST(TO_JSON(c_json_payload) AS TEXT) <> '{}'
          THEN CAST(TO_JSON(c_json_payload) AS TEXT)
          ELSE NULL
        END
      ) IS NULL
      THEN 'no message text'
    END AS skip,
    CASE
      WHEN c_resource_type <> '' AND NOT c_resource_type IN ('cloudml_job', 'ml_job')
      THEN c_resource_type
    END AS other_resource
  FROM (
    SELECT
      insert_id AS c_insert_id,
      timestamp AS c_timestamp,
      severity AS c_severity,
      resource.labels AS c_resource_labels,
      labels AS c_labels,
      json_payload AS c_json_payload,
      text_payload AS c_text_payload,
      proto_payload AS c_proto_payload,
      resource.type AS c_resource_type
    FROM "test-project"."logs"."_AllLogs"
    WHERE
      timestamp >= $start AND timestamp < $end
  )
  WHERE
    COALESCE(
      NULLIF(JSON_VALUE(c_resource_labels, '$.job_id') ->> '$', ''),
      NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/job_id"') ->> '$', '')
    ) IN (SELECT UNNEST($job_ids))
)
GROUP BY
  job,
  trial,
  task,
  vm,
  skip,
  other_resource;

-- Query A: the entries the rule book may match
SELECT
  tbl,
  insert_id,
  time,
  severity,
  job,
  trial,
  task,
  vm,
  text
FROM (
  SELECT
    *,
    REGEXP_MATCHES(text, '[^\x00-\x7f]') AS wide,
    LOWER(text) AS lowered,
    REGEXP_REPLACE(REGEXP_REPLACE(text, '[\t-\r\x1c-\x1f ]+', ' ', 'g'), '^ | $', '', 'g') AS folded
  FROM (
    SELECT
      '_AllLogs' AS tbl,
      c_insert_id AS insert_id,
      c_timestamp AS time,
      c_severity AS severity,
      COALESCE(
        NULLIF(JSON_VALUE(c_resource_labels, '$.job_id') ->> '$', ''),
        NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/job_id"') ->> '$', '')
      ) AS job,
      COALESCE(
        NULLIF(JSON_VALUE(c_labels, '$.trial_id') ->> '$', ''),
        NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/trial_id"') ->> '$', '')
      ) AS trial,
      COALESCE(
        NULLIF(JSON_VALUE(c_resource_labels, '$.task_name') ->> '$', ''),
        NULLIF(JSON_VALUE(c_labels, '$.task_name') ->> '$', ''),
        NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/task_name"') ->> '$', ''),
        NULLIF(
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload.attrs.tag)) IN ('string', 'varchar')
            THEN JSON_VALUE(c_json_payload.attrs.tag, '$') ->> '$'
            ELSE NULL
          END,
          ''
        )
      ) AS task,
      NULLIF(JSON_VALUE(c_labels, '$."compute.googleapis.com/resource_id"') ->> '$', '') AS vm,
      COALESCE(
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.message)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.message, '$') ->> '$'
          ELSE NULL
        END,
        c_text_payload,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.msg)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.msg, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.log)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.log, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.text)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.text, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload.event)) IN ('string', 'varchar')
          THEN JSON_VALUE(c_json_payload.event, '$') ->> '$'
          ELSE NULL
        END,
        CASE
          WHEN LOWER(JSON_TYPE(c_json_payload)) = 'object'
          AND CAST(TO_JSON(c_json_payload) AS TEXT) <> '{}'
          THEN CAST(TO_JSON(c_json_payload) AS TEXT)
          ELSE NULL
        END
      ) AS text,
      CASE
        WHEN NOT c_proto_payload IS NULL
        THEN 'audit log entry (protoPayload)'
        WHEN c_resource_type <> '' AND NOT c_resource_type IN ('cloudml_job', 'ml_job')
        THEN 'other resource type: '
        WHEN COALESCE(
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload.message)) IN ('string', 'varchar')
            THEN JSON_VALUE(c_json_payload.message, '$') ->> '$'
            ELSE NULL
          END,
          c_text_payload,
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload.msg)) IN ('string', 'varchar')
            THEN JSON_VALUE(c_json_payload.msg, '$') ->> '$'
            ELSE NULL
          END,
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload.log)) IN ('string', 'varchar')
            THEN JSON_VALUE(c_json_payload.log, '$') ->> '$'
            ELSE NULL
          END,
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload.text)) IN ('string', 'varchar')
            THEN JSON_VALUE(c_json_payload.text, '$') ->> '$'
            ELSE NULL
          END,
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload.event)) IN ('string', 'varchar')
            THEN JSON_VALUE(c_json_payload.event, '$') ->> '$'
            ELSE NULL
          END,
          CASE
            WHEN LOWER(JSON_TYPE(c_json_payload)) = 'object'
            AND CAST(TO_JSON(c_json_payload) AS TEXT) <> '{}'
            THEN CAST(TO_JSON(c_json_payload) AS TEXT)
            ELSE NULL
          END
        ) IS NULL
        THEN 'no message text'
      END AS skip,
      CASE
        WHEN c_resource_type <> '' AND NOT c_resource_type IN ('cloudml_job', 'ml_job')
        THEN c_resource_type
      END AS other_resource
    FROM (
      SELECT
        insert_id AS c_insert_id,
        timestamp AS c_timestamp,
        severity AS c_severity,
        resource.labels AS c_resource_labels,
        labels AS c_labels,
        json_payload AS c_json_payload,
        text_payload AS c_text_payload,
        proto_payload AS c_proto_payload,
        resource.type AS c_resource_type
      FROM "test-project"."logs"."_AllLogs"
      WHERE
        timestamp >= $start AND timestamp < $end
    )
    WHERE
      COALESCE(
        NULLIF(JSON_VALUE(c_resource_labels, '$.job_id') ->> '$', ''),
        NULLIF(JSON_VALUE(c_labels, '$."ml.googleapis.com/job_id"') ->> '$', '')
      ) IN (SELECT UNNEST($job_ids))
  )
  WHERE
    skip IS NULL
    AND (
      REGEXP_MATCHES(
        text,
        '[^\x00-\x7f\x{b0}-\x{b1}\x{b7}-\x{b7}\x{d7}-\x{d7}\x{f7}-\x{f7}\x{5d0}-\x{5ea}\x{2013}-\x{2014}\x{2018}-\x{2019}\x{201c}-\x{201d}\x{2022}-\x{2022}\x{2190}-\x{2193}\x{2500}-\x{259f}\x{2713}-\x{2718}\x{3001}-\x{3002}\x{3041}-\x{3096}\x{30a1}-\x{30fa}\x{30fc}-\x{30fc}\x{4e00}-\x{9fff}\x{ac00}-\x{d7a3}\x{1f300}-\x{1f64f}\x{1f680}-\x{1f6ff}\x{1f900}-\x{1f9ff}]'
      )
      OR REGEXP_MATCHES(
        LOWER(text),
        '403|accelerators|ai\-platform|arguments|attempts|barrier|barrier\_id|batchpredictionjobs|bootdisksizegb|broadcasted|bus|cancelled|checkpoint|clean|cleaning|collective|command|communicator|completed|connect|containerd|creating|cuda|cuda\_error\_out\_of\_memory|current|currently|custom\-jobs|customjobs|dag|datalabelingjobs|deadline|directory|distbackenderror|enospc|error|errormessage|exceeded|exception|exec|executable|exit|exited|failed|failure|file|following|forbidden|heartbeat|httperror|hyperparametertuningjobs|initializing|insufficient|internal|interrupt|invalid\_argument|invalidargument|job\_id|job\_state|jobid|jobstate|managed|ml\_job|model|modeldeploymentmonitoringjobs|module|monitoredbarrier|nccl|non\-zero|notfound|oci|oom|operation|out\-of\-memory|outofmemoryerror|permission|permission\_denied|permissiondenied|permissionerror|pipelinejobs|preparing|processgroupnccl|provisioned|provisioning|queued|quota|reason|rendezvous|replicas|requirements|resource\_exhausted|resourceexhausted|returned|run\_module|running|seconds|setting|shared|shm|space|specified|starterror|submitted|succeeded|successfully|tearing|termination|timeout|traceback|trainingpipelines|updating|waiting|watchdog|\x{5d4}\x{5e0}\x{5ea}\x{5d5}\x{5e0}\x{5d9}\x{5dd}|\x{5d4}\x{5e8}\x{5e4}\x{5dc}\x{5d9}\x{5e7}\x{5d4}|\x{5de}\x{5e9}\x{5d0}\x{5d1}\x{5d9}\x{5dd}|\x{5225}\x{306e}\x{30a2}\x{30af}\x{30bb}\x{30e9}\x{30ec}\x{30fc}\x{30bf}\x{3092}\x{4f7f}\x{7528}\x{3057}\x{3066}\x{304f}\x{3060}\x{3055}\x{3044}'
      )
    )
)
WHERE
  wide
  OR (
    STRPOS(lowered, 'module') > 0
    AND REGEXP_MATCHES(folded, 'No module named \x27?(?P<module>[A-Za-z_][\w.]*)\x27?')
  )
  OR (
    (
      STRPOS(lowered, 'nccl') > 0 OR STRPOS(lowered, 'distbackenderror') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'NCCL error|Some NCCL operations have failed or timed out|nccl(?:Internal|System|UnhandledCuda|Remote|InvalidUsage)Error|DistBackendError'
    )
  )
  OR (
    (
      STRPOS(lowered, 'forbidden') > 0
      OR STRPOS(lowered, 'permission') > 0
      OR STRPOS(lowered, 'permissionerror') > 0
      OR STRPOS(lowered, 'permission_denied') > 0
      OR STRPOS(lowered, '403') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'Forbidden: 403|\b403 (?:Forbidden|GET|POST|PUT|PATCH)\b|PERMISSION_DENIED|PermissionError|[Pp]ermission denied|[Pp]ermission .[\w.]+. denied'
    )
  )
  OR (
    (
      STRPOS(lowered, 'notfound') > 0
      OR STRPOS(lowered, 'directory') > 0
      OR STRPOS(lowered, 'specified') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'FileNotFoundError|No such file or directory|The specified bucket does not exist|NotFound: 404|(?:^|[^A-Za-z])NotFoundError'
    )
  )
  OR (
    (
      STRPOS(lowered, 'shared') > 0
      OR STRPOS(lowered, 'shm') > 0
      OR STRPOS(lowered, 'bus') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'insufficient shared memory|out of shared memory|killed by signal: Bus error|/dev/shm'
    )
  )
  OR (
    (
      STRPOS(lowered, 'space') > 0 OR STRPOS(lowered, 'enospc') > 0
    )
    AND REGEXP_MATCHES(folded, 'No space left on device|ENOSPC')
  )
  OR (
    (
      STRPOS(lowered, 'starterror') > 0
      OR STRPOS(lowered, 'containerd') > 0
      OR STRPOS(lowered, 'oci') > 0
      OR STRPOS(lowered, 'exec') > 0
      OR STRPOS(lowered, 'executable') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'Termination reason: ?StartError|failed to create containerd task|OCI runtime create failed|exec format error|executable file not found in \$PATH'
    )
  )
  OR (
    STRPOS(lowered, 'termination') > 0
    AND REGEXP_MATCHES(
      folded,
      'The\s*replica\s*(?P<REPLICA_NAME_0>(?:[A-Za-z][A-Za-z0-9]*(?:-replica)?[- ][0-9]+))\s*exited\s*with\s*a\s*non\-zero\s*status\s*of\s*(?P<EXIT_CODE_1>(?:[0-9]+(?: ?\( ?SIG[A-Z0-9]+ ?\))?))\s*\.\s*Termination\s*reason\s*:\s*(?P<REASON_2>(?:[A-Za-z][A-Za-z0-9_-]*))(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'non-zero') > 0
    AND REGEXP_MATCHES(
      folded,
      'The\s*replica\s*(?P<REPLICA_NAME_0>(?:[A-Za-z][A-Za-z0-9]*(?:-replica)?[- ][0-9]+))\s*exited\s*with\s*a\s*non\-zero\s*status\s*of\s*(?P<EXIT_CODE_1>(?:[0-9]+(?: ?\( ?SIG[A-Z0-9]+ ?\))?))'
    )
  )
  OR (
    STRPOS(lowered, 'exited') > 0
    AND REGEXP_MATCHES(
      folded,
      'To\s*find\s*out\s*more\s*about\s*why\s*your\s*job\s*exited\s*please\s*check\s*the\s*logs'
    )
  )
  OR (
    STRPOS(lowered, 'non-zero') > 0
    AND REGEXP_MATCHES(
      folded,
      'The\s*replica\s*(?P<REPLICA_NAME_0>(?:[A-Za-z][A-Za-z0-9]*(?:-replica)?[- ][0-9]+))\s*ran\s*out\s*of\s*memory\s*and\s*exited\s*with\s*a\s*non\-zero\s*status\s*of\s*(?P<EXIT_CODE_1>(?:[0-9]+(?: ?\( ?SIG[A-Z0-9]+ ?\))?))(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'out-of-memory') > 0
    AND REGEXP_MATCHES(
      folded,
      'The\s*replica\s*(?P<REPLICA_NAME_0>(?:[A-Za-z][A-Za-z0-9]*(?:-replica)?[- ][0-9]+))\s*ran\s*out\-of\-memory\s*and\s*exited\s*with\s*a\s*non\-zero\s*status\s*of\s*(?P<EXIT_CODE_1>(?:[0-9]+(?: ?\( ?SIG[A-Z0-9]+ ?\))?))'
    )
  )
  OR (
    STRPOS(lowered, 'replicas') > 0
    AND REGEXP_MATCHES(
      folded,
      'Replicas\s*low\s*on\s*memory\s*:\s*(?P<POOL_NAME_0>(?:workerpool[0-9]+|master|worker|ps|evaluator))\s*\.\s*Specify\s*a\s*machine\s*with\s*larger\s*memory\s*and\s*try\s*again(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'replicas') > 0
    AND REGEXP_MATCHES(
      folded,
      'Replicas\s*low\s*on\s*memory\s*:\s*(?P<POOL_NAME_0>(?:workerpool[0-9]+|master|worker|ps|evaluator))(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'bootdisksizegb') > 0
    AND REGEXP_MATCHES(
      folded,
      'Replicas\s*low\s*on\s*disk\s*:\s*(?P<POOL_NAME_0>(?:workerpool[0-9]+|master|worker|ps|evaluator))\s*\.\s*Specify\s*a\s*larger\s*bootDiskSizeGb'
    )
  )
  OR (
    STRPOS(lowered, 'insufficient') > 0
    AND REGEXP_MATCHES(
      folded,
      'Resources\s*are\s*insufficient\s*in\s*region\s*:\s*(?P<REGION_NAME_0>(?:[a-z]+(?:-[a-z]+)+[0-9]+))\s*\.\s*Try\s*a\s*different\s*region\s*or\s*use\s*a\s*different\s*accelerator(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'insufficient') > 0
    AND REGEXP_MATCHES(
      folded,
      'Resources\s*are\s*insufficient\s*in\s*region\s*:\s*(?P<REGION_NAME_0>(?:[a-z]+(?:-[a-z]+)+[0-9]+))'
    )
  )
  OR (
    STRPOS(lowered, 'internal') > 0
    AND REGEXP_MATCHES(folded, 'Internal\s*error\s*occurred\s*for\s*the\s*current\s*attempt')
  )
  OR (
    STRPOS(lowered, 'following') > 0
    AND REGEXP_MATCHES(
      folded,
      'The\s*following\s*quota\s*metrics\s*exceed\s*quota\s*limits\s*:\s*(?P<METRIC_NAME_0>(?:[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+|/[A-Za-z0-9_-]+)*))'
    )
  )
  OR (
    STRPOS(lowered, 'accelerators') > 0
    AND REGEXP_MATCHES(
      folded,
      'Quota\s*failure\s*for\s*project\s*(?P<PROJECT_ID_0>(?:[a-z][a-z0-9-]*[a-z0-9]|[0-9]+))\s*\.\s*The\s*request\s*for\s*(?P<COUNT_1>(?:[0-9]+))\s*(?P<ACCELERATOR_NAME_2>(?:[A-Z][A-Z0-9_]*))\s*accelerators\s*exceeds\s*the\s*allowed\s*maximum\s*of'
    )
  )
  OR (
    (
      STRPOS(lowered, 'outofmemoryerror') > 0
      OR STRPOS(lowered, 'cuda') > 0
      OR STRPOS(lowered, 'cuda_error_out_of_memory') > 0
      OR STRPOS(lowered, 'oom') > 0
      OR STRPOS(lowered, 'resource_exhausted') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'torch\.cuda\.OutOfMemoryError(?:: CUDA out of memory)?|CUDA out of memory|CUDA error: out of memory|CUDA_ERROR_OUT_OF_MEMORY|OOM when allocating tensor|RESOURCE_EXHAUSTED: Out of memory'
    )
  )
  OR (
    STRPOS(lowered, 'timeout') > 0
    AND REGEXP_MATCHES(folded, 'Timeout\s*at\s*NCCL\s*work\s*:\s*(?P<SEQ_NUM_0>(?:[0-9]+))')
  )
  OR (
    STRPOS(lowered, 'processgroupnccl') > 0
    AND REGEXP_MATCHES(
      folded,
      'ProcessGroupNCCL\s*\x27\s*s\s*watchdog\s*got\s*stuck\s*for\s*(?P<TIMEOUT_SECONDS_0>(?:[0-9]+))\s*seconds\s*without\s*making\s*progress\s*in\s*monitoring\s*enqueued\s*collectives'
    )
  )
  OR (
    STRPOS(lowered, 'collective') > 0
    AND REGEXP_MATCHES(
      folded,
      'Received\s*a\s*dump\s*signal\s*due\s*to\s*a\s*collective\s*timeout\s*from\s*rank\s*(?P<RANK_0>(?:[0-9]+))'
    )
  )
  OR (
    STRPOS(lowered, 'collective') > 0
    AND REGEXP_MATCHES(
      folded,
      'Received\s*a\s*dump\s*signal\s*due\s*to\s*a\s*collective\s*timeout\s*from\s*this\s*local\s*rank'
    )
  )
  OR (
    STRPOS(lowered, 'communicator') > 0
    AND REGEXP_MATCHES(folded, 'NCCL\s*communicator\s*was\s*aborted\s*on\s*rank\s*(?P<RANK_0>(?:[0-9]+))')
  )
  OR (
    STRPOS(lowered, 'monitoredbarrier') > 0
    AND REGEXP_MATCHES(
      folded,
      'Rank\s*(?P<RANK_0>(?:[0-9]+))\s*failed\s*to\s*pass\s*monitoredBarrier\s*in\s*(?P<TIMEOUT_MS_1>(?:[0-9]+))\s*ms'
    )
  )
  OR (
    STRPOS(lowered, 'operation') > 0
    AND REGEXP_MATCHES(
      folded,
      'Timed\s*out\s*waiting\s*(?P<TIMEOUT_MS_0>(?:[0-9]+))\s*ms\s*for\s*recv\s*operation\s*to\s*complete'
    )
  )
  OR (
    STRPOS(lowered, 'operation') > 0
    AND REGEXP_MATCHES(
      folded,
      'Timed\s*out\s*waiting\s*(?P<TIMEOUT_MS_0>(?:[0-9]+))\s*ms\s*for\s*send\s*operation\s*to\s*complete'
    )
  )
  OR (
    STRPOS(lowered, 'broadcasted') > 0
    AND REGEXP_MATCHES(
      folded,
      'One\s*or\s*more\s*tensors\s*were\s*submitted\s*to\s*be\s*reduced\s*,\s*gathered\s*or\s*broadcasted\s*by\s*subset\s*of\s*ranks\s*and\s*are\s*waiting\s*for\s*remainder\s*of\s*ranks\s*for\s*more\s*than\s*(?P<TIMEOUT_SECONDS_0>(?:[0-9]+))\s*seconds'
    )
  )
  OR (
    STRPOS(lowered, 'watchdog') > 0
    AND REGEXP_MATCHES(
      folded,
      '(?:\[[Rr]ank ?(?P<rank>\d+)\]:? )?Watchdog caught collective operation timeout(?:: ?Work\w*\((?:SeqNum=\d+, ?)?OpType=(?P<collective>\w+)(?:, ?NumelIn=\d+, ?NumelOut=\d+)?, ?Timeout\(ms\)=(?P<timeout_ms>\d+)\))?'
    )
  )
  OR (
    STRPOS(lowered, 'seconds') > 0
    AND REGEXP_MATCHES(
      folded,
      'Timed\s*out\s*after\s*(?P<TIMEOUT_SECONDS_0>(?:[0-9]+))\s*seconds\s*waiting\s*for\s*clients'
    )
  )
  OR (
    STRPOS(lowered, 'seconds') > 0
    AND REGEXP_MATCHES(
      folded,
      'Timed\s*out\s*after\s*(?P<TIMEOUT_SECONDS_0>(?:[0-9]+))\s*seconds\s*waiting\s*for\s*workers'
    )
  )
  OR (
    STRPOS(lowered, 'initializing') > 0
    AND REGEXP_MATCHES(
      folded,
      'Timed\s*out\s*initializing\s*process\s*group\s*in\s*store\s*based\s*barrier\s*on\s*rank\s*:\s*(?P<RANK_0>(?:[0-9]+))'
    )
  )
  OR (
    STRPOS(lowered, 'initializing') > 0
    AND REGEXP_MATCHES(
      folded,
      'Timed\s*out\s*initializing\s*process\s*group\s*in\s*store\s*based\s*barrier\s*on\s*rank\s*(?P<RANK_0>(?:[0-9]+))'
    )
  )
  OR (
    STRPOS(lowered, 'connect') > 0
    AND REGEXP_MATCHES(
      folded,
      'The\s*client\s*socket\s*has\s*timed\s*out\s*after\s*(?P<TIMEOUT_MS_0>(?:[0-9]+))\s*ms\s*while\s*trying\s*to\s*connect\s*to'
    )
  )
  OR (
    STRPOS(lowered, 'rendezvous') > 0
    AND REGEXP_MATCHES(folded, 'RendezvousTimeoutError|RendezvousConnectionError')
  )
  OR (
    STRPOS(lowered, 'deadline') > 0
    AND REGEXP_MATCHES(
      folded,
      '(?:Coordination service agent in error status|coordination service with status): DEADLINE_EXCEEDED: Deadline Exceeded|CoordinationService/\w+: ?:?\{[^{}]*"description": ?"Deadline Exceeded"|DEADLINE_EXCEEDED: Deadline Exceeded RPC: /tensorflow\.CoordinationService/(?P<collective>\w+)'
    )
  )
  OR (
    STRPOS(lowered, 'barrier_id') > 0
    AND REGEXP_MATCHES(
      folded,
      'Barrier\s*timed\s*out\s*\.\s*Barrier_id\s*:\s*(?P<BARRIER_ID_0>(?:\S*[^\s.]))(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'barrier') > 0
    AND REGEXP_MATCHES(
      folded,
      'Barrier\s*timed\s*out\s*\.\s*Id\s*:\s*(?P<BARRIER_ID_0>(?:\S*[^\s.]))(?:\s*\.)?'
    )
  )
  OR (
    STRPOS(lowered, 'heartbeat') > 0
    AND REGEXP_MATCHES(folded, 'Task /job:[\w-]+/replica:\d+/task:(?P<rank>\d+) heartbeat timeout')
  )
  OR (
    STRPOS(lowered, 'provisioned') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Waiting\s*for\s*job\s*to\s*be\s*provisioned(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'provisioning') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Vertex\s*AI\s*is\s*provisioning\s*job\s*running\s*framework\s*\.\s*First\s*time\s*usage\s*might\s*take\s*couple\s*of\s*minutes\s*,\s*and\s*subsequent\s*runs\s*can\s*be\s*much\s*faster(?:\s*\.)?)\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'setting') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Vertex\s*AI\s*is\s*setting\s*up\s*this\s*job(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'waiting') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Waiting\s*for\s*training\s*program\s*to\s*start(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'preparing') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Job\s*is\s*preparing(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'running') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Job\s*is\s*running(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'tearing') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Tearing\s*down\s*training\s*program(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'tearing') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Finished\s*tearing\s*down\s*training\s*program(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'failed') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Job\s*failed(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'successfully') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Job\s*completed\s*successfully(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'successfully') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Task\s*completed\s*successfully(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'attempts') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Job\s*will\s*not\s*be\s*retried\s*,\s*max\s*error\s*retry\s*attempts\s*reached(?:\s*\.)?)\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'queued') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Job\s*(?P<JOB_ID_0>(?:[A-Za-z0-9_-]+))\s*is\s*queued(?:\s*\.)?)\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'requirements') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Validating\s*job\s*requirements\s*\.\s*\.(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'successfully') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Job\s*creation\s*request\s*has\s*been\s*successfully\s*validated(?:\s*\.)?)\s*\z'
    )
  )
  OR (
    (
      STRPOS(lowered, 'checkpoint') > 0 OR STRPOS(lowered, 'model') > 0
    )
    AND REGEXP_MATCHES(folded, '(?i)\bsav(?:ing|ed) (?:model )?checkpoint\b|\bsaving model to\b')
  )
  OR (
    STRPOS(lowered, 'traceback') > 0
    AND REGEXP_MATCHES(folded, 'Traceback \(most recent call last\)')
  )
  OR (
    STRPOS(lowered, 'file') > 0
    AND REGEXP_MATCHES(
      folded,
      '^(?:\[rank\d+\]: ?)?File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)(?: +\*)?$'
    )
  )
  OR (
    (
      STRPOS(lowered, 'error') > 0
      OR STRPOS(lowered, 'exception') > 0
      OR STRPOS(lowered, 'interrupt') > 0
      OR STRPOS(lowered, 'exit') > 0
      OR STRPOS(lowered, 'failure') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      '^(?:\[rank\d+\]: ?)?(?P<exception>[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure)|[a-z_][a-z0-9_.]*\.exceptions\.[A-Z]\w*)(?::\s?(?P<message>.*))?$'
    )
  )
  OR (
    STRPOS(lowered, 'arguments') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Running\s*task\s*with\s*arguments\s*:\s*(?P<TASK_ARGUMENTS_0>(?:\S.*)))\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'updating') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Updating\s*master\s*address\s*to\s*local\s*address\s*(?P<HOST_NAME_0>(?:[A-Za-z0-9][A-Za-z0-9.-]*)))\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'run_module') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Running\s*run_module\s*\.\s*py)\s*\z')
  )
  OR (
    STRPOS(lowered, 'running') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Running\s*command\s*:\s*(?P<COMMAND_LINE_0>(?:\S.*)))\s*\z')
  )
  OR (
    STRPOS(lowered, 'reason') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Task\s*completed\s*\.\s*Exit\s*code\s*\(\s*(?P<EXIT_CODE_0>(?:[0-9]+(?: ?\( ?SIG[A-Z0-9]+ ?\))?))\s*\)\s*\.\s*Exit\s*reason\s*\(\s*(?P<REASON_1>(?:[A-Za-z][A-Za-z0-9_-]*))\s*\))\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'cleaning') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Module\s*completed\s*;\s*cleaning\s*up(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'clean') > 0
    AND REGEXP_MATCHES(folded, '\A\s*(?:Clean\s*up\s*finished(?:\s*\.)?)\s*\z')
  )
  OR (
    STRPOS(lowered, 'returned') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Command\s*\x27\s*(?P<COMMAND_LINE_0>(?:\S.*))\s*\x27\s*returned\s*non\-zero\s*exit\s*status\s*(?P<RETURN_CODE_1>(?:-?[0-9]+|<Signals\.SIG[A-Z0-9]+: ?[0-9]+>))(?:\s*\.)?)\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'command') > 0
    AND REGEXP_MATCHES(
      folded,
      '\A\s*(?:Command\s*\x27\s*(?P<COMMAND_LINE_0>(?:\S.*))\s*\x27\s*died\s*with\s*(?P<RETURN_CODE_1>(?:-?[0-9]+|<Signals\.SIG[A-Z0-9]+: ?[0-9]+>))(?:\s*\.)?)\s*\z'
    )
  )
  OR (
    STRPOS(lowered, 'failed') > 0
    AND REGEXP_MATCHES(
      folded,
      '(?:^|[^"\x27])\b(?:Job|Training) failed with:(?: ?(?:Step #\d+: ?)?code: ?(?P<code>\d+)\b)?'
    )
  )
  OR (
    STRPOS(lowered, 'errormessage') > 0
    AND REGEXP_MATCHES(folded, '^errorMessage: ?(?P<message>\S.*)$')
  )
  OR (
    STRPOS(lowered, 'dag') > 0
    AND REGEXP_MATCHES(
      folded,
      '(?P<message>The DAG failed because some tasks failed\. ?The failed tasks are: ?\[(?P<tasks>[^\]]+)\][^"]*)'
    )
  )
  OR (
    (
      STRPOS(lowered, 'resource_exhausted') > 0
      OR STRPOS(lowered, 'invalid_argument') > 0
      OR STRPOS(lowered, 'resourceexhausted') > 0
      OR STRPOS(lowered, 'invalidargument') > 0
      OR STRPOS(lowered, 'exceeded') > 0
      OR STRPOS(lowered, 'creating') > 0
      OR STRPOS(lowered, 'quota') > 0
      OR STRPOS(lowered, 'permissiondenied') > 0
      OR STRPOS(lowered, 'resource_exhausted') > 0
      OR STRPOS(lowered, 'httperror') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      '(?:\(gcloud\.[a-z0-9_.-]+\) |"status": ?"|StatusCode\.)(?P<status>RESOURCE_EXHAUSTED|INVALID_ARGUMENT)\b|\b(?P<sdk_status>ResourceExhausted: ?429|InvalidArgument: ?400)\b|\bcode=(?P<pipeline_status>INVALID_ARGUMENT|RESOURCE_EXHAUSTED)\b(?:\S* ){0,60}?\S*?\bFailed to create custom job\b|\b(?P<denied>PermissionDenied: ?403) Permission denied on resource project\b|\b429 Quota exceeded\b|\bError creating the job\b|\bQuota failure for project\b|^(?P<http_status>429|400) (?:RESOURCE_EXHAUSTED|INVALID_ARGUMENT): |<HttpError (?P<http_error>429|400) when requesting https://(?:ml|[a-z0-9-]*aiplatform)\.googleapis\.com/v1(?:beta1)?/projects/[^/\s]+/(?:locations/[^/\s]+/)?(?:jobs|customJobs|hyperparameterTuningJobs|trainingPipelines)\?'
    )
  )
  OR (
    (
      STRPOS(lowered, 'batchpredictionjobs') > 0
      OR STRPOS(lowered, 'modeldeploymentmonitoringjobs') > 0
      OR STRPOS(lowered, 'datalabelingjobs') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      '\b(?:batchPredictionJobs|modelDeploymentMonitoringJobs|dataLabelingJobs)/(?P<other_job>[0-9]+)\b'
    )
  )
  OR (
    (
      STRPOS(lowered, 'ml_job') > 0
      OR STRPOS(lowered, 'customjobs') > 0
      OR STRPOS(lowered, 'hyperparametertuningjobs') > 0
      OR STRPOS(lowered, 'trainingpipelines') > 0
      OR STRPOS(lowered, 'pipelinejobs') > 0
      OR STRPOS(lowered, 'submitted') > 0
      OR STRPOS(lowered, 'jobid') > 0
      OR STRPOS(lowered, 'job_id') > 0
      OR STRPOS(lowered, 'currently') > 0
      OR STRPOS(lowered, 'custom-jobs') > 0
      OR STRPOS(lowered, 'ai-platform') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      'ml_job(?:%2F|/)job_id(?:%2F|/)(?P<job_id>[A-Za-z0-9_-]+)|\b(?:customJobs|hyperparameterTuningJobs|trainingPipelines)/(?P<job_id>[0-9]+)\b|\bpipelineJobs/(?P<job_id>[a-z][a-z0-9-]*)\b|\bJob \[(?P<job_id>[A-Za-z0-9_-]+)\] submitted successfully|^jobId: ?(?P<job_id>[A-Za-z0-9_-]+)$|^\$ jobId ?: chr "(?P<job_id>[A-Za-z0-9_-]+)"$|ml\.googleapis\.com%2Fjob_id%2F(?P<job_id>[A-Za-z0-9_-]+)|\bJob \x27(?P<job_id>[A-Za-z0-9_-]+)\x27 is currently running|\bgcloud (?:(?:beta|alpha) )?ai custom-jobs (?:describe|stream-logs|cancel) (?:--?[a-z][a-z-]*(?:=\S+)? )*(?P<job_id>[0-9]{6,})\b|\bgcloud (?:(?:beta|alpha) )?ai-platform jobs (?:describe|stream-logs|cancel) (?:--?[a-z][a-z-]*(?:=\S+)? )*(?P<job_id>[A-Za-z][A-Za-z0-9_]*)(?:\s|$)'
    )
  )
  OR (
    (
      STRPOS(lowered, 'jobstate') > 0
      OR STRPOS(lowered, 'job_state') > 0
      OR STRPOS(lowered, 'succeeded') > 0
      OR STRPOS(lowered, 'failed') > 0
      OR STRPOS(lowered, 'cancelled') > 0
      OR STRPOS(lowered, 'current') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      '\b(?:(?:customJobs|hyperparameterTuningJobs|trainingPipelines)/(?:(?P<job_id>[0-9]+)|\S+)|pipelineJobs/(?:(?P<job_id>[a-z][a-z0-9-]*)|\S+)) current state: ?(?:(?:(?:JobState|PipelineState)\.)?(?:JOB|PIPELINE)_STATE_(?P<state>[A-Z_]+)\b|(?P<state_code>[0-9]{1,2})\s*$)|(?:\bJobState\.|\bstatus |^state: ?|\bcurrent state: ?)JOB_STATE_(?P<state>[A-Z_]+)\b|^state: ?(?P<state>SUCCEEDED|FAILED|CANCELLED)$|^\$ state ?: chr "(?P<state>SUCCEEDED|FAILED|CANCELLED)"$|^Job: \S+ \((?P<state>SUCCEEDED|FAILED|CANCELLED)\)$'
    )
  )
  OR (
    (
      STRPOS(lowered, 'completed') > 0 OR STRPOS(lowered, 'managed') > 0
    )
    AND REGEXP_MATCHES(
      folded,
      '\b[A-Z]\w* run (?P<run>completed)\. ?Resource name: ?projects/[^/\s]+/locations/[^/\s]+/(?:(?:customJobs|hyperparameterTuningJobs|trainingPipelines)/(?:(?P<job_id>[0-9]+)\b|\S+)|pipelineJobs/(?:(?P<job_id>[a-z][a-z0-9-]*)\b|\S+))|\bTraining (?P<run>did not produce a Managed Model) returning None\. ?Training Pipeline projects/[^/\s]+/locations/[^/\s]+/trainingPipelines/(?:(?P<job_id>[0-9]+)\b|\S+)'
    )
  );
