# Warning and sanitizer flags shared by every userspace target.
add_library(neuron_warnings INTERFACE)
target_compile_options(neuron_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wformat=2 -Wundef -Wvla
  $<$<COMPILE_LANGUAGE:C>:-Wstrict-prototypes -Wmissing-prototypes>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual>
  $<$<BOOL:${NEURON_WERROR}>:-Werror>)

if(NEURON_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=all
                      -fno-omit-frame-pointer)
  add_link_options(-fsanitize=address,undefined)
endif()
