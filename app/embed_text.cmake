# Embeds a text file in the binary as a C++ string constant (a raw string literal):
#   cmake -DINPUT=FILE -DOUTPUT=HEADER -DNAME=kName -P embed_text.cmake
# writes HEADER with `inline constexpr char kName[] = R"lsembed(...)lsembed";`, touching it only when its
# text changes. Used for app/trl/train_trl.py (lorastudio export --trl writes it out).
file(READ "${INPUT}" content)
string(FIND "${content}" ")lsembed" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains \")lsembed\", which ends the raw string literal it is embedded in")
endif()
file(WRITE "${OUTPUT}.tmp" "// Generated from ${INPUT} by app/embed_text.cmake; edit that file instead.\n"
           "#pragma once\n"
           "inline constexpr char ${NAME}[] = R\"lsembed(${content})lsembed\";\n")
file(COPY_FILE "${OUTPUT}.tmp" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.tmp")
