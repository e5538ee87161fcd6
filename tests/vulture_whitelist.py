"""Names vulture (the dead-code check in `tox -e lint`) cannot see used: framework hooks and interfaces (uvicorn,
Litestar, LangChain, LangGraph), library objects' attributes set, fields read by name, fixtures and rules pytest and
hypothesis find by name. Each line says where the name is; add one only for a name used where vulture cannot look.
"""

# ruff: noqa
# fmt: off

# adapters: a write-log code kept beside its siblings, onnxruntime's session options, a verdict's field
UPSERT  # unused variable (adapters/chroma/salvage.py:25)
milliseconds  # unused variable (adapters/model_check.py:95)
_.log_severity_level  # unused attribute (adapters/onnx_model.py:159)
_.graph_optimization_level  # unused attribute (adapters/onnx_model.py:160)
_.inter_op_num_threads  # unused attribute (adapters/onnx_model.py:162)

# domain: the update flag read by name (stored(clear_with=...)), the public Command alias, an attrs default
clear_expiry  # unused variable (domain/commands.py:193)
Command  # unused variable (domain/commands.py:416)
_._build_context  # unused method (domain/service.py:71)

# entrypoints: uvicorn's and Litestar's hooks, LangChain's and LangGraph's interfaces, OpenAPI schema attributes,
# a route's signature, settings read by name
__getattr__  # unused function (entrypoints/http/protocol.py:46)
_.send_400_response  # unused method (entrypoints/http/protocol.py:91)
_.aembed_documents  # unused method (entrypoints/langgraph/index.py:43)
_.aembed_query  # unused method (entrypoints/langgraph/index.py:46)
_.asweep_ttl  # unused method (entrypoints/langgraph/store.py:450)
_.start_ttl_sweeper  # unused method (entrypoints/langgraph/store.py:453)
_.stop_ttl_sweeper  # unused method (entrypoints/langgraph/store.py:461)
_.generate_field_definitions  # unused method (entrypoints/rest/bodies.py:42)
_.detect_nested_field  # unused method (entrypoints/rest/bodies.py:63)
_.all_of  # unused attribute (entrypoints/rest/contract.py:175)
_.additional_properties  # unused attribute (entrypoints/rest/contract.py:196)
_.__signature__  # unused attribute (entrypoints/rest/queries.py:110)
_.__annotations__  # unused attribute (entrypoints/rest/queries.py:111)
_.__qualname__  # unused attribute (entrypoints/rest/queries.py:112)
server_idle_seconds  # unused variable (entrypoints/settings.py:215)
server_store_idle_seconds  # unused variable (entrypoints/settings.py:217)
server_timeout_seconds  # unused variable (entrypoints/settings.py:219)

# the package: PEP 562's module __getattr__ and __dir__
__getattr__  # unused function (src/agent_memory/__init__.py:146)
__dir__  # unused function (src/agent_memory/__init__.py:155)

# tests: autouse and usefixtures fixtures, fields of test-local classes, hypothesis rules, attributes set on libraries
small_pages  # unused function (tests/adapters/test_chroma_warming.py:47)
_no_leftover_processes  # unused function (tests/adapters/test_files_store.py:692)
namespace_labels  # unused variable (tests/adapters/test_frontmatter.py:52)
priority  # unused variable (tests/adapters/test_plain.py:61)
fd  # unused variable (tests/adapters/test_shared.py:139)
_release_embedded_chroma  # unused function (tests/conftest.py:11)
fresh_shared  # unused function (tests/doors/test_agent_tools.py:410)
fresh_shared  # unused variable (tests/doors/test_agent_tools.py:416)
fresh_shared  # unused variable (tests/doors/test_agent_tools.py:434)
age  # unused variable (tests/doors/test_agent_tools_langmem_examples.py:110)
preferences  # unused variable (tests/doors/test_agent_tools_langmem_examples.py:112)
updated_within_days  # unused variable (tests/doors/test_cli_table.py:102)
_.should_exit  # unused attribute (tests/doors/test_http_protocol.py:57)
restorable  # unused variable (tests/e2e/doors.py:79)
permissive_umask  # unused function (tests/e2e/test_private_data.py:26)
_.whitespace_split  # unused attribute (tests/e2e/test_readme_tour.py:30)
data_dir_the_user_made  # unused function (tests/e2e/test_spec_000.py:15)
_.soft_delete  # unused method (tests/e2e/test_stateful.py:122)
_.get_agrees  # unused method (tests/e2e/test_stateful.py:151)
_.list_and_count_agree  # unused method (tests/e2e/test_stateful.py:164)
_.keyword_search_finds_the_live_and_never_the_deleted  # unused method (tests/e2e/test_stateful.py:172)
_close_open_stores  # registered with atexit (entrypoints/langgraph/store.py)
