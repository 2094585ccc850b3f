/* A program of a project that uses an installed (or add_subdirectory'd) safeload: it loads
   every tensor of the checkpoint it is given and prints the count and the header's version. */
#include <stdio.h>
#include "safeload.h"

int main(int argc, char **argv) {
    safeload_model *model;
    safeload_loaded *weights;
    safeload_error err;
    size_t count;
    if (argc < 2) return 2;
    if (safeload_model_open(&model, argv[1], NULL, &err) != SAFELOAD_OK) {
        fprintf(stderr, "%s: %s\n", safeload_result_id(err.code), err.message);
        return 1;
    }
    if (safeload_load_all(model, SAFELOAD_F32, NULL, &weights, &err) != SAFELOAD_OK) {
        fprintf(stderr, "%s: %s\n", safeload_result_id(err.code), err.message);
        safeload_model_close(model);
        return 1;
    }
    count = weights->count;
    safeload_loaded_free(weights);
    safeload_model_close(model);
    printf("safeload %s: %u tensors loaded\n", SAFELOAD_VERSION_STRING, (unsigned)count);
    return 0;
}
