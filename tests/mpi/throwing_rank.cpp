// A job in which rank 1 throws while the others wait in an all-reduce: the job must end with the
// error (MPI_Abort from the terminate handler that distributed::init() installs), not hang.
#include <stdexcept>

#include "xgrad/xgrad.hpp"

int main() {
    namespace dist = xgrad::distributed;
    dist::init();
    xgrad::Tensor t = xgrad::ones({4});
    if (dist::rank() == 1) throw std::runtime_error("the data file of rank 1 is missing (thrown on purpose)");
    dist::all_reduce(t);  // waits for rank 1 forever, unless the job is aborted
    dist::finalize();
    return 0;
}
