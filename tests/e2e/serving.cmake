# weft serve end-to-end tests (label e2e) and the serving load benchmark; included from
# tests/e2e/CMakeLists.txt.
find_package(Python3 COMPONENTS Interpreter)

add_executable(make_test_model ${CMAKE_CURRENT_LIST_DIR}/make_test_model.cpp)
target_link_libraries(make_test_model PRIVATE weft_model)
target_compile_definitions(make_test_model PRIVATE WEFT_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

if(Python3_Interpreter_FOUND)
  # The official openai client (installed from requirements.txt by the test when missing).
  add_test(NAME e2e_openai_server
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_openai_server.py
                   --weft $<TARGET_FILE:weft> --make-model $<TARGET_FILE:make_test_model>)
  set_tests_properties(e2e_openai_server PROPERTIES LABELS e2e TIMEOUT 600)
  # Assistant prefill, chat echo, lists of prompts, completions echo, /v1/models/{id} on the
  # default model (it has a chat template of its own).
  add_test(NAME e2e_openai_api_gaps
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_openai_api_gaps.py
                   --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model)
  set_tests_properties(e2e_openai_api_gaps PROPERTIES LABELS e2e TIMEOUT 600)
  add_test(NAME e2e_http_conformance
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_http_conformance.py
                   --weft $<TARGET_FILE:weft> --make-model $<TARGET_FILE:make_test_model>)
  set_tests_properties(e2e_http_conformance PROPERTIES LABELS e2e TIMEOUT 300)
  # Speculative decoding through serve and batch on the default model and its draft.
  add_test(NAME e2e_speculative_serving
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_speculative_serving.py
                   --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model)
  set_tests_properties(e2e_speculative_serving PROPERTIES LABELS e2e TIMEOUT 600)
  # Banned phrases: --banned-phrases and bad_words, streamed and not (the concatenated SSE text).
  add_test(NAME e2e_banned_phrases
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_banned_phrases.py
                   --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model)
  set_tests_properties(e2e_banned_phrases PROPERTIES LABELS e2e TIMEOUT 300)
  # The stress check, small: 60 sampled generations against 100 phrases harvested from the model's
  # own output (thousands of rollbacks); the 10,000 x 1,000 run is the same script with its defaults.
  add_test(NAME e2e_banned_phrases_stress_small
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/banned_phrases_stress.py
                   --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model
                   --generations 60 --phrases 100 --concurrency 16
                   --timing-generations 30 --rounds 1)
  set_tests_properties(e2e_banned_phrases_stress_small PROPERTIES LABELS e2e TIMEOUT 300)
  if(TARGET weft_constrain)
    # Constrained output (JSON schema corpus, openai .parse(), LangChain, vLLM's fields, errors).
    add_test(NAME e2e_constrained_output
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_constrained_output.py
                     --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model)
    set_tests_properties(e2e_constrained_output PROPERTIES LABELS e2e TIMEOUT 600)
    # Tool calling: required / named / auto, streamed and not, history, errors.
    add_test(NAME e2e_tool_calling
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_tool_calling.py
                     --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model)
    set_tests_properties(e2e_tool_calling PROPERTIES LABELS e2e TIMEOUT 600)
    # Mistral's name form, [TOOL_CALLS]name[CALL_ID]id[ARGS]{...}: forced calls, the model's own
    # [CALL_ID] ids as the calls' ids (streamed and whole), ids in the rendered history.
    add_test(NAME e2e_tool_calling_mistral
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_tool_calling_mistral.py
                     --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model)
    set_tests_properties(e2e_tool_calling_mistral PROPERTIES LABELS e2e TIMEOUT 600)
  endif()
endif()

if(TARGET weft_serving_proto)
  # For scripts (the supervisor's fault test): one streamed Generate call, printed as JSON.
  add_executable(grpc_generate_client ${CMAKE_CURRENT_LIST_DIR}/grpc_generate_client.cpp)
  target_link_libraries(grpc_generate_client PRIVATE weft_serving_proto nlohmann_json::nlohmann_json)
  weft_add_gtest(grpc_generate_test e2e SOURCES ${CMAKE_CURRENT_LIST_DIR}/grpc_generate_test.cpp
                 LIBS weft_serving weft_model)
endif()

# The load benchmark (a program, not a test): tests/e2e/run_load_bench.sh drives it.
if(WEFT_BUILD_BENCH)
  add_executable(serve_load_bench ${CMAKE_CURRENT_LIST_DIR}/serve_load_bench.cpp)
  target_link_libraries(serve_load_bench PRIVATE nlohmann_json::nlohmann_json Threads::Threads)
endif()

# Rank 0 serves a TP2 job under mpirun: same answers as one process; SIGTERM drains every rank.
if(WEFT_MPI)
  add_test(NAME e2e_serve_mpi_tp2
           COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/serve_mpi_test.sh ${MPIEXEC_EXECUTABLE}
                   $<TARGET_FILE:weft> $<TARGET_FILE:make_test_model>)
  set_tests_properties(e2e_serve_mpi_tp2 PROPERTIES LABELS "e2e;mpi" TIMEOUT 300)
  if(Python3_Interpreter_FOUND)
    # weft supervise under 20 random rank kills (10 TP2, 10 PP2; the PP2 run stalls a rank with
    # SIGSTOP once too): every request completes with the undisturbed run's text.
    # Its bounds: an engine that cannot run or never becomes ready, one that dies every time.
    add_test(NAME e2e_supervisor_give_up
             COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/supervisor_give_up_test.sh $<TARGET_FILE:weft>
                     ${PROJECT_SOURCE_DIR}/configs/default-model)
    set_tests_properties(e2e_supervisor_give_up PROPERTIES LABELS e2e TIMEOUT 300)
    foreach(layout tp2 pp2)
      set(stops 0)
      if(layout STREQUAL "pp2")
        set(stops 1)
      endif()
      set(grpc_client)
      if(TARGET weft_serving_proto)  # gRPC requests in the mix too
        set(grpc_client --grpc-client $<TARGET_FILE:grpc_generate_client>)
      endif()
      add_test(NAME e2e_supervisor_fault_${layout}
               COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/supervisor_fault_test.py
                       --weft $<TARGET_FILE:weft> --mpirun ${MPIEXEC_EXECUTABLE}
                       --model ${PROJECT_SOURCE_DIR}/configs/default-model --layout ${layout}
                       --kills 10 --stops ${stops} ${grpc_client})
      set_tests_properties(e2e_supervisor_fault_${layout} PROPERTIES LABELS "e2e;mpi" TIMEOUT 600)
    endforeach()
  endif()
endif()

if(Python3_Interpreter_FOUND)
  # weft inspect: the report against tokenize / generate --json, the stop kinds, and the page in
  # a headless Chromium (scripts/install-deps.sh installs it; the page check skips without it).
  add_test(NAME e2e_inspect
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_inspect.py
                   --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model
                   --eos-model ${PROJECT_SOURCE_DIR}/tests/golden/models/llama_gqa)
  set_tests_properties(e2e_inspect PROPERTIES LABELS e2e TIMEOUT 600)
endif()

if(Python3_Interpreter_FOUND)
  # "weft_debug" on weft serve: the report against tokenize, the response's logprobs and weft
  # inspect's attention (also from TP2 and PP2 mpirun servers), the stop kinds, rollbacks, KV
  # blocks, streams, the refusals (reports off, no key, bad values, n 2) and the HTML page endpoint.
  set(weft_debug_report_mpirun)
  if(WEFT_MPI)
    set(weft_debug_report_mpirun --mpirun ${MPIEXEC_EXECUTABLE})
  endif()
  add_test(NAME e2e_serve_debug_report
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_serve_debug_report.py
                   --weft $<TARGET_FILE:weft> --model ${PROJECT_SOURCE_DIR}/configs/default-model
                   ${weft_debug_report_mpirun})
  set_tests_properties(e2e_serve_debug_report PROPERTIES LABELS e2e TIMEOUT 600)
endif()
