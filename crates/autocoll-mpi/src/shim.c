/* The MPI constants that are macros in mpi.h, as symbols Rust can read. */
#include <mpi.h>

void *const autocoll_in_place = MPI_IN_PLACE;
void *const autocoll_bottom = MPI_BOTTOM;
const int autocoll_err_other = MPI_ERR_OTHER;
const int autocoll_err_arg = MPI_ERR_ARG;
const int autocoll_combiner_named = MPI_COMBINER_NAMED;
const int autocoll_keyval_invalid = MPI_KEYVAL_INVALID;
const MPI_Op autocoll_op_replace = MPI_REPLACE;
const MPI_Op autocoll_op_no_op = MPI_NO_OP;

/* MPI_COMM_NULL_COPY_FN is a macro too; attributes of the private
 * duplicates are not copied into duplicates of the program's communicator. */
int autocoll_create_keyval(MPI_Comm_delete_attr_function *del, int *keyval)
{
    return PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, del, keyval, NULL);
}
